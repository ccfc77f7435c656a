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

// Writes make_text() to `path` when a flag named a file (make_text is not
// called otherwise); Ok when `path` is empty.
Status WriteIfNamed(const std::string& path, const std::function<std::string()>& make_text);

}  // namespace stet::tools
