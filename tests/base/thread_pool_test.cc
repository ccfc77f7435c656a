// The pool's partition is static and covers each index exactly once.
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace stet {
namespace {

TEST(ThreadPool, ParallelForCoversEachIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 64, 1000}) {
      for (int64_t grain : {1, 4, 16}) {
        std::vector<std::atomic<int>> hits(n);
        pool.ParallelFor(n, grain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[i]++;
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " " << n;
      }
    }
  }
}

TEST(ThreadPool, PartitionIsGrainAligned) {
  int64_t b, e;
  PartitionRange(100, 8, 1, 3, &b, &e);
  EXPECT_EQ(b % 8, 0);
  PartitionRange(100, 8, 2, 3, &b, &e);
  EXPECT_EQ(e, 100);
}

TEST(ThreadPool, ManyRunsBackToBack) {
  ThreadPool pool(3);
  std::atomic<int> count{0};
  for (int i = 0; i < 10000; ++i) pool.Run([&](int) { count++; });
  EXPECT_EQ(count.load(), 30000);
}

}  // namespace
}  // namespace stet
