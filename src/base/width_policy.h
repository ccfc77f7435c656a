// How many of a pool's threads should take part while the machine is busy.
// Spinning workers on an oversubscribed machine take cores from the thread
// that issues the work, and a worker descheduled while it holds a piece stalls
// the whole job; running on fewer threads for a while is then faster. Which
// threads run never changes a result bit (numerics rule R2), so the width is
// free to follow the machine. Pure logic: the clock and the run-queue wait are
// inputs, so tests drive it deterministically.
#pragma once

#include <chrono>
#include <cstdint>

#include "base/function_ref.h"

namespace stet {

class WidthPolicy {
 public:
  using Clock = std::chrono::steady_clock;
  // A window of jobs this long is judged by the threads' run-queue wait: more
  // than kBusyShare of their time waiting means more runnable threads than
  // cores. Reductions for a busy machine last a back-off from kBackoffMin,
  // doubling up to kBackoffMax while probes at full width find it still busy;
  // a single stalled job holds the width down for kBriefHold, then probes.
  static constexpr std::chrono::milliseconds kWindow{10};
  static constexpr double kBusyShare = 0.1;
  static constexpr std::chrono::milliseconds kBriefHold{1};
  static constexpr std::chrono::milliseconds kBackoffMin{20};
  static constexpr std::chrono::milliseconds kBackoffMax{1280};

  explicit WidthPolicy(int n_threads) : n_(n_threads < 1 ? 1 : n_threads), active_(n_) {}

  int active() const { return active_; }
  Clock::duration backoff() const { return backoff_; }

  // Before each job. `run_delay` sums the run-queue wait (ns) of the pool's
  // threads, or -1 where the kernel does not say (then only stalls count); it
  // is read only when a window ends. `caller` names the issuing thread's
  // counter: a window whose jobs came from two threads is not judged.
  void Tick(Clock::time_point now, FunctionRef<int64_t()> run_delay, const void* caller);
  // After a job whose issuer waited long for a piece another thread held.
  void Stalled(Clock::time_point now, FunctionRef<int64_t()> run_delay, const void* caller);

 private:
  void Reduce(int by, Clock::time_point now, bool brief);
  void StartWindow(Clock::time_point now, int64_t delay, const void* caller);

  const int n_;
  int active_;
  Clock::time_point window_start_{}, reduced_until_{};
  int64_t window_delay_ = -1;
  const void* window_caller_ = nullptr;
  Clock::duration backoff_ = kBackoffMin;
  bool probing_ = false;  // the first window back at full width
  int busy_windows_ = 0;  // busy windows in a row at full width
};

}  // namespace stet
