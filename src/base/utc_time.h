// UTC timestamps as records, request logs and proxy exchanges carry them.
#pragma once

#include <chrono>
#include <string>

namespace stet {

// t as ISO 8601 in UTC to the millisecond: "2026-01-02T03:04:05.678Z".
std::string IsoUtcMillis(std::chrono::system_clock::time_point t);

// The current time, likewise.
std::string NowIso8601();

}  // namespace stet
