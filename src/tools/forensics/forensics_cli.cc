// The forensics subcommands' shared pieces (forensics_cli.h).
#include "tools/forensics/forensics_cli.h"

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

Status WriteIfNamed(const std::string& path, const std::function<std::string()>& make_text) {
  if (path.empty()) return Status::Ok();
  return forensics::WriteTextFile(path, make_text());
}

}  // namespace stet::tools
