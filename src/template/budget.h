// The render budget (internal to src/template): counts one render's steps,
// the bytes it holds and its time against its TemplateLimits, and polls the
// caller's cancel callback. The running render's budget is reachable from any
// helper on its thread (t_active_budget), so leaf code (string scans, JSON
// dumps, value construction) charges what it touches without an Interpreter.
// Invariants: work is charged before or as it happens, and anything large is
// checked before it is allocated, so no single operation runs or allocates far
// past a limit; every value created during a render is held until it is freed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "template/chat_template.h"

namespace stet::tmpl {

// A step is about 50 ns of interpreter work on a slow core: one node, one
// element of a list, 32 bytes of a byte-at-a-time loop (UTF-8 decoding,
// escaping, case mapping), 128 bytes of memcpy / memchr / memcmp within the
// cache, or 32 bytes written to a fresh large buffer (a string growing past
// kLargeBytes gets new pages every time: ~1-2 ns a byte, measured).
inline constexpr uint64_t kScanBytesPerStep = 32;
inline constexpr uint64_t kCopyBytesPerStep = 128;
inline constexpr uint64_t kLargeBytes = 64 << 10;
// Held per heap value besides its payload: its block (control block, header,
// std::string, ~80 bytes) and its Value slot in a list (32 bytes), rounded up
// for the slack of a growing vector, so the count stays an upper bound.
inline constexpr uint64_t kValueOverhead = 128;

class Budget {
 public:
  Budget(const TemplateLimits& limits, std::function<bool()> cancelled);

  // `n` units of work; throws kLimit past max_steps, polls clock and cancel.
  void Steps(uint64_t n) {
    steps_ = n > kHuge ? kHuge : steps_ + n;
    if (steps_ >= next_check_) Check();
  }
  void Scan(uint64_t bytes) { Steps(1 + bytes / kScanBytesPerStep); }
  void Copy(uint64_t bytes) { Steps(1 + bytes / kCopyBytesPerStep); }

  // `bytes` are now held (a value or an output buffer): counted against
  // max_memory_bytes and as the work of writing them (at the scan rate when
  // they are a large buffer).
  void Hold(uint64_t bytes);
  void Release(uint64_t bytes) { live_ -= bytes < live_ ? bytes : live_; }
  // A string or list of `bytes` is about to be built: throws if it would pass
  // max_output_bytes, or max_memory_bytes with what is held. Counts nothing.
  void Reserve(uint64_t bytes) const;
  // Only the size limit: a single string or list of `bytes`.
  void CheckSize(uint64_t bytes) const;
  // Only the memory budget: a scratch buffer (decoded code points, the parts
  // of a split) of `bytes` is about to be built beside what is held.
  void CheckMemory(uint64_t bytes) const;

  const TemplateLimits& limits() const { return limits_; }
  uint64_t steps() const { return steps_; }
  uint64_t peak_bytes() const { return peak_; }
  uint64_t created_bytes() const { return created_; }

 private:
  static constexpr uint64_t kHuge = uint64_t{1} << 62;
  static constexpr uint64_t kPollEvery = 4096;  // steps between clock / cancel polls
  void Check();
  [[noreturn]] void OverMemory() const;

  TemplateLimits limits_;
  std::function<bool()> cancelled_;
  std::chrono::steady_clock::time_point deadline_;
  bool has_deadline_;
  uint64_t steps_ = 0;
  uint64_t next_check_ = 0;
  uint64_t live_ = 0;
  uint64_t peak_ = 0;
  uint64_t created_ = 0;
};

// The budget of the render running on this thread; null outside a render
// (parsing, context conversion), where the helpers below do nothing.
inline thread_local Budget* t_active_budget = nullptr;

class ActiveBudgetScope {
 public:
  explicit ActiveBudgetScope(Budget* b) : prev_(t_active_budget) { t_active_budget = b; }
  ~ActiveBudgetScope() { t_active_budget = prev_; }
  ActiveBudgetScope(const ActiveBudgetScope&) = delete;
  ActiveBudgetScope& operator=(const ActiveBudgetScope&) = delete;

 private:
  Budget* prev_;
};

inline void ChargeSteps(uint64_t n) {
  if (Budget* b = t_active_budget) b->Steps(n);
}
inline void ChargeScan(uint64_t bytes) {
  if (Budget* b = t_active_budget) b->Scan(bytes);
}
inline void ChargeCopy(uint64_t bytes) {
  if (Budget* b = t_active_budget) b->Copy(bytes);
}
// Before building a value of `bytes`, and while a string that will be one grows.
inline void ReserveBytes(uint64_t bytes) {
  if (Budget* b = t_active_budget) b->Reserve(bytes);
}
// Before building a scratch buffer of `bytes` (not a value: no size limit).
inline void ReserveScratch(uint64_t bytes) {
  if (Budget* b = t_active_budget) b->CheckMemory(bytes);
}

}  // namespace stet::tmpl
