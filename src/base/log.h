// Minimal leveled logging to stderr. STET_LOG_LEVEL=debug|info|warn|error.
#pragma once

#include <cstdarg>

namespace stet {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void Log(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace stet

#define STET_LOG_INFO(...) ::stet::Log(::stet::LogLevel::kInfo, __VA_ARGS__)
#define STET_LOG_WARN(...) ::stet::Log(::stet::LogLevel::kWarn, __VA_ARGS__)
#define STET_LOG_ERROR(...) ::stet::Log(::stet::LogLevel::kError, __VA_ARGS__)
#define STET_LOG_DEBUG(...) ::stet::Log(::stet::LogLevel::kDebug, __VA_ARGS__)
