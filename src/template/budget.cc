// The render budget's checks: the step, memory and size limits, the
// wall-clock backstop and the cancel callback (polled every kPollEvery steps).
// Each error names the limit and its value, so a refused template says which
// cap it hit.
#include "template/budget.h"

#include <algorithm>
#include <string>

#include "template/error.h"

namespace stet::tmpl {

Budget::Budget(const TemplateLimits& limits, std::function<bool()> cancelled)
    : limits_(limits), cancelled_(std::move(cancelled)), has_deadline_(limits.max_wall_ms > 0) {
  if (has_deadline_)
    deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(limits.max_wall_ms);
  next_check_ = std::min(kPollEvery, limits_.max_steps + 1);
}

void Budget::Check() {
  if (steps_ > limits_.max_steps) {
    Throw(ErrorKind::kLimit,
          "the render exceeded its step budget (" + std::to_string(limits_.max_steps) + " steps)");
  }
  if (cancelled_ && cancelled_())
    Throw(ErrorKind::kCancelled, "the render was cancelled by its caller");
  if (has_deadline_ && std::chrono::steady_clock::now() > deadline_) {
    Throw(ErrorKind::kLimit,
          "the render exceeded its time limit (" + std::to_string(limits_.max_wall_ms) + " ms)");
  }
  next_check_ = std::min(steps_ + kPollEvery, limits_.max_steps + 1);
}

void Budget::OverMemory() const {
  Throw(ErrorKind::kLimit, "the render exceeded its memory budget (" +
                               std::to_string(limits_.max_memory_bytes) + " bytes held at once)");
}

void Budget::Hold(uint64_t bytes) {
  bytes = std::min(bytes, kHuge);
  if (bytes > limits_.max_memory_bytes - std::min<uint64_t>(live_, limits_.max_memory_bytes))
    OverMemory();
  live_ += bytes;
  created_ += bytes;
  peak_ = std::max(peak_, live_);
  Steps(2);  // the allocation itself (make_shared, header): ~100 ns
  if (bytes >= kLargeBytes) {
    Scan(bytes);
  } else {
    Copy(bytes);
  }
}

void Budget::CheckSize(uint64_t bytes) const {
  if (bytes > limits_.max_output_bytes) {
    Throw(ErrorKind::kLimit, "the render exceeded its size limit: a string or list of " +
                                 std::to_string(bytes) + " bytes (limit " +
                                 std::to_string(limits_.max_output_bytes) + " bytes)");
  }
}

void Budget::CheckMemory(uint64_t bytes) const {
  if (bytes > limits_.max_memory_bytes - std::min<uint64_t>(live_, limits_.max_memory_bytes))
    OverMemory();
}

void Budget::Reserve(uint64_t bytes) const {
  CheckSize(bytes);
  CheckMemory(bytes);
}

}  // namespace stet::tmpl
