#include "support/test_support.h"

#include <sys/stat.h>

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

}  // namespace stet::testing
