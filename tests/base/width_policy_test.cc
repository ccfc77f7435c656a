// The busy-machine width policy, driven with a fake clock and fake run-queue
// waits: a quiet machine keeps every thread; two busy windows in a row take
// away one thread per thread's worth of waiting; probes at full width double
// the back-off while the machine stays busy and reset it once it is free; a
// stall is held briefly and then probed; a window is judged only when one
// thread issued its jobs and the kernel reports the wait.
#include "base/width_policy.h"

#include <gtest/gtest.h>

namespace stet {
namespace {

using Clock = WidthPolicy::Clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

// Drives a policy with jobs every `step`; each thread taking part waits for a
// core `busy_share` of the time.
// The first window opens at the first job, so a Sim starts one quiet window in.
struct Sim {
  explicit Sim(int n) : p(n) { Run(milliseconds(10), 0.0); }
  WidthPolicy p;
  Clock::time_point now{};
  double delay_ns = 0;
  bool kernel_says = true;
  const void* caller = &p;
  void Run(milliseconds for_how_long, double busy_share, microseconds step = microseconds(50)) {
    const Clock::time_point end = now + for_how_long;
    while (now < end) {
      p.Tick(
          now, [&] { return kernel_says ? static_cast<int64_t>(delay_ns) : int64_t{-1}; }, caller);
      now += step;
      delay_ns += busy_share * p.active() * std::chrono::duration<double, std::nano>(step).count();
    }
  }
};

TEST(WidthPolicy, AQuietMachineKeepsEveryThread) {
  Sim s(4);
  s.Run(milliseconds(2000), 0.02);
  EXPECT_EQ(s.p.active(), 4);
}

TEST(WidthPolicy, TwoBusyWindowsTakeAwayTheExcessThreads) {
  Sim s(2);
  s.Run(milliseconds(15), 0.4);  // one busy window: maybe a hiccup
  EXPECT_EQ(s.p.active(), 2);
  s.Run(milliseconds(10), 0.4);
  EXPECT_EQ(s.p.active(), 1);

  Sim four(4);  // a quarter of the threads' time waiting: one thread too many
  four.Run(milliseconds(25), 0.25);
  EXPECT_EQ(four.p.active(), 3);
}

TEST(WidthPolicy, OneBusyWindowIsAHiccup) {
  Sim s(2);
  for (int i = 0; i < 20; ++i) {
    s.Run(milliseconds(10), 0.5);
    s.Run(milliseconds(10), 0.0);
    ASSERT_EQ(s.p.active(), 2) << i;
  }
}

TEST(WidthPolicy, BackoffDoublesWhileBusyAndResetsWhenFree) {
  Sim s(2);
  s.Run(milliseconds(25), 0.4);
  ASSERT_EQ(s.p.active(), 1);
  // Reduced, the lone thread waits for nobody; each probe at full width finds
  // the machine busy again and doubles the back-off, up to the cap.
  for (int i = 0; i < 12; ++i) s.Run(WidthPolicy::kBackoffMax + milliseconds(15), 0.4);
  EXPECT_EQ(s.p.backoff(), WidthPolicy::kBackoffMax);
  EXPECT_EQ(s.p.active(), 1);
  s.Run(WidthPolicy::kBackoffMax + milliseconds(30), 0.0);  // free: the probe stays
  EXPECT_EQ(s.p.active(), 2);
  EXPECT_EQ(s.p.backoff(), WidthPolicy::kBackoffMin);
}

TEST(WidthPolicy, AStallIsHeldBrieflyThenProbed) {
  Sim s(2);
  s.p.Stalled(
      s.now, [] { return int64_t{0}; }, s.caller);
  EXPECT_EQ(s.p.active(), 1);
  s.Run(WidthPolicy::kBriefHold + milliseconds(1), 0.0);
  EXPECT_EQ(s.p.active(), 2);
  s.Run(milliseconds(100), 0.0);
  EXPECT_EQ(s.p.active(), 2);
  EXPECT_EQ(s.p.backoff(), WidthPolicy::kBackoffMin);
}

TEST(WidthPolicy, UnjudgedWindows) {
  Sim unknown(2);  // no schedstat: windows say nothing
  unknown.kernel_says = false;
  unknown.Run(milliseconds(200), 0.9);
  EXPECT_EQ(unknown.p.active(), 2);

  Sim two_callers(2);  // the issuer changes every window: none is judged
  int a = 0, b = 0;
  for (int i = 0; i < 20; ++i) {
    two_callers.caller = i % 2 ? static_cast<const void*>(&a) : &b;
    two_callers.Run(milliseconds(10), 0.9);
  }
  EXPECT_EQ(two_callers.p.active(), 2);
}

}  // namespace
}  // namespace stet
