#include "base/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace stet {

namespace {
LogLevel InitialLevel() {
  const char* env = std::getenv("STET_LOG_LEVEL");
  if (!env) return LogLevel::kInfo;
  if (!std::strcmp(env, "debug")) return LogLevel::kDebug;
  if (!std::strcmp(env, "warn")) return LogLevel::kWarn;
  if (!std::strcmp(env, "error")) return LogLevel::kError;
  return LogLevel::kInfo;
}
LogLevel g_level = InitialLevel();
std::mutex g_mu;
}  // namespace

void SetLogLevel(LogLevel level) { g_level = level; }
bool LogEnabled(LogLevel level) { return level >= g_level; }

void Log(LogLevel level, const char* fmt, ...) {
  if (!LogEnabled(level)) return;
  static const char* kNames[] = {"debug", "info", "warn", "error"};
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "stet %s: ", kNames[static_cast<int>(level)]);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

}  // namespace stet
