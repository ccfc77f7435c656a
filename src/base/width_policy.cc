// The busy-machine width policy: windows of run-queue wait, stalls, back-off.
// One busy window or one stall may be a hiccup (a virtual CPU the host paused
// for a moment); two busy windows in a row, or a busy probe, is a busy machine.
#include "base/width_policy.h"

#include <algorithm>

namespace stet {

void WidthPolicy::Tick(Clock::time_point now, FunctionRef<int64_t()> run_delay,
                       const void* caller) {
  if (n_ == 1) return;
  if (active_ < n_ && now >= reduced_until_) {  // back-off over: probe at full width
    active_ = n_;
    probing_ = true;
    busy_windows_ = 0;
    StartWindow(now, run_delay(), caller);
    return;
  }
  if (now - window_start_ < kWindow) return;
  const int64_t delay = run_delay();
  if (active_ > 1 && caller == window_caller_ && window_delay_ >= 0 && delay >= window_delay_) {
    const double waited = static_cast<double>(delay - window_delay_);
    const double budget =
        std::chrono::duration<double, std::nano>(now - window_start_).count() * active_;
    const bool busy = waited > kBusyShare * budget;
    if (busy && (probing_ || ++busy_windows_ >= 2)) {
      // Each thread's worth of waiting is one thread more than the free cores.
      Reduce(static_cast<int>(waited / budget * active_ + 0.999), now, false);
      StartWindow(now, delay, caller);
      return;
    }
    if (!busy) {
      busy_windows_ = 0;
      if (probing_) backoff_ = kBackoffMin;  // the machine is free again
    }
    probing_ = false;
  }
  StartWindow(now, delay, caller);
}

void WidthPolicy::Stalled(Clock::time_point now, FunctionRef<int64_t()> run_delay,
                          const void* caller) {
  if (active_ == 1) return;
  Reduce(1, now, !probing_);  // a stall while probing is a failed probe
  StartWindow(now, run_delay(), caller);
}

void WidthPolicy::Reduce(int by, Clock::time_point now, bool brief) {
  const bool was_reduced = active_ < n_;
  active_ = std::max(1, active_ - std::max(1, by));
  if (brief) {
    reduced_until_ = now + kBriefHold;
  } else {
    reduced_until_ = now + backoff_;
    if (probing_ || was_reduced) backoff_ = std::min<Clock::duration>(2 * backoff_, kBackoffMax);
  }
  busy_windows_ = 0;
  probing_ = false;
}

void WidthPolicy::StartWindow(Clock::time_point now, int64_t delay, const void* caller) {
  window_start_ = now;
  window_delay_ = delay;
  window_caller_ = caller;
}

}  // namespace stet
