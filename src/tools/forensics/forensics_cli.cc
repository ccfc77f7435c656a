// The forensics subcommands' shared pieces (forensics_cli.h).
#include "tools/forensics/forensics_cli.h"

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "forensics/client/openai.h"
#include "tools/common.h"

namespace stet::tools {

int Fail(const Status& s) {
  ReportError(s);
  return kExitFailed;
}

std::string ApiKeyOrEnv(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* k = std::getenv("OPENAI_API_KEY");
  return k ? k : "";
}

int64_t TimeoutMs(double seconds) { return static_cast<int64_t>(seconds * 1000); }

EndpointFlags AddEndpointFlags(CLI::App* cmd, std::string* endpoint, std::string* api_key,
                               std::string* model, const std::string& endpoint_help,
                               const std::string& model_help, const std::string& api_key_help) {
  EndpointFlags f;
  f.endpoint = cmd->add_option("--endpoint", *endpoint, endpoint_help);
  cmd->add_option(
      "--api-key", *api_key,
      api_key_help.empty() ? "Bearer API key (default: $OPENAI_API_KEY)" : api_key_help);
  f.model = cmd->add_option("-m,--model", *model, model_help);
  return f;
}

EndpointFlags AddEndpointArgs(CLI::App* cmd, EndpointArgs* a, const std::string& endpoint_help,
                              const std::string& model_help, const std::string& concurrency_help) {
  EndpointFlags f =
      AddEndpointFlags(cmd, &a->endpoint, &a->api_key, &a->model, endpoint_help, model_help);
  cmd->add_option("-c,--concurrency", a->concurrency, concurrency_help)->capture_default_str();
  cmd->add_option("--timeout", a->timeout_s, "Per-request timeout in seconds")
      ->capture_default_str();
  return f;
}

Status WriteIfNamed(const std::string& path, const std::function<std::string()>& make_text) {
  if (path.empty()) return Status::Ok();
  return forensics::WriteTextFile(path, make_text());
}

}  // namespace stet::tools
