// What the forensics subcommands (probe, eval, drift, replay) share: their
// error exit code (2, since 1 means "found a divergence"), the API key's
// default ($OPENAI_API_KEY), the flags that reach an endpoint, and writing a
// report to the file a flag names. One place, so every client subcommand
// fails, authenticates and times out the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace stet::tools {

constexpr int kExitFailed = 2;

// Prints "stet: error: ..." and returns kExitFailed.
int Fail(const Status& s);

// The --api-key value; when empty, $OPENAI_API_KEY (or "" without it).
std::string ApiKeyOrEnv(const std::string& flag);

// A --timeout in seconds as the milliseconds the clients take.
int64_t TimeoutMs(double seconds);

// The flags a client subcommand reaches its endpoint with; a subcommand's
// arguments derive from it.
struct EndpointArgs {
  std::string endpoint, api_key, model;
  int concurrency = 1;
  double timeout_s = 300;

  // Into a forensics options struct: endpoint, api_key (or $OPENAI_API_KEY),
  // model, concurrency and timeout_ms.
  template <typename Options>
  void CopyTo(Options* o) const {
    o->endpoint = endpoint;
    o->api_key = ApiKeyOrEnv(api_key);
    o->model = model;
    o->concurrency = concurrency;
    o->timeout_ms = TimeoutMs(timeout_s);
  }
};

// Declares --endpoint, --api-key and -m,--model into those strings (what the endpoint and the
// model name mean differs per subcommand: their help); returns the two options so a
// subcommand can require or exclude them.
struct EndpointFlags {
  CLI::Option* endpoint;
  CLI::Option* model;
};
EndpointFlags AddEndpointFlags(CLI::App* cmd, std::string* endpoint, std::string* api_key,
                               std::string* model, const std::string& endpoint_help,
                               const std::string& model_help, const std::string& api_key_help = "");
// Declares all of EndpointArgs: AddEndpointFlags, then -c,--concurrency and --timeout.
EndpointFlags AddEndpointArgs(CLI::App* cmd, EndpointArgs* a, const std::string& endpoint_help,
                              const std::string& model_help, const std::string& concurrency_help);

// Writes make_text() to `path` when a flag named a file (make_text is not
// called otherwise); Ok when `path` is empty.
Status WriteIfNamed(const std::string& path, const std::function<std::string()>& make_text);

}  // namespace stet::tools
