#include "support/test_support.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace stet::testing {

std::string SharedDir() {
  const char* env = std::getenv("STET_SHARED_DIR");
  return env ? env : STET_SHARED_DIR;
}
std::string ModelCacheDir() {
  const char* env = std::getenv("STET_MODEL_CACHE");
  return env ? env : STET_MODEL_CACHE;
}
std::string SourceDir() { return STET_SOURCE_DIR; }
bool InCi() {
  const char* env = std::getenv("CI");
  return env && std::string(env) == "true";
}
bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}
std::string ReadFileOrDie(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    ADD_FAILURE() << "cannot read " << path;
    return {};
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

CommandResult RunCommand(const std::string& command_line) {
  CommandResult r;
  FILE* p = popen(command_line.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace stet::testing
