// The run-queue wait counter reads on Linux, never goes backwards, and may be
// read from another thread (the pool's caller reads its workers').
#include "base/run_delay.h"

#include <gtest/gtest.h>

#include <thread>

namespace stet {
namespace {

TEST(RunDelay, ReadsAndNeverGoesBackwards) {
#if defined(__linux__)
  RunDelay mine = RunDelay::ForThisThread();
  ASSERT_TRUE(mine.ok()) << "/proc/thread-self/schedstat did not open";
  const int64_t first = mine.Nanos();
  ASSERT_GE(first, 0);
  for (int i = 0; i < 1000; ++i) std::this_thread::yield();
  EXPECT_GE(mine.Nanos(), first);
  int64_t from_other = -1;
  std::thread([&] { from_other = mine.Nanos(); }).join();
  EXPECT_GE(from_other, first);
#else
  EXPECT_FALSE(RunDelay::ForThisThread().ok());
#endif
}

TEST(RunDelay, MovedFromIsEmpty) {
  RunDelay a = RunDelay::ForThisThread();
  RunDelay b = std::move(a);
  EXPECT_FALSE(a.ok());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  EXPECT_EQ(a.Nanos(), -1);
}

}  // namespace
}  // namespace stet
