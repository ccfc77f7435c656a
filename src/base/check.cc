#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace stet::internal {

void CheckFailed(const char* file, int line, const char* cond, const char* msg) {
  std::fprintf(stderr, "stet: CHECK failed at %s:%d: %s%s%s\n", file, line, cond, msg ? " — " : "",
               msg ? msg : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace stet::internal
