// STET_CHECK: always-on assertions for programmer errors (never for user input,
// which gets a Status). Aborts with file:line and the failed condition.
#pragma once

namespace stet::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* cond, const char* msg);
}  // namespace stet::internal

#define STET_CHECK(cond)                                                 \
  do {                                                                   \
    if (__builtin_expect(!(cond), 0))                                    \
      ::stet::internal::CheckFailed(__FILE__, __LINE__, #cond, nullptr); \
  } while (0)

#define STET_CHECK_MSG(cond, msg)                                    \
  do {                                                               \
    if (__builtin_expect(!(cond), 0))                                \
      ::stet::internal::CheckFailed(__FILE__, __LINE__, #cond, msg); \
  } while (0)
