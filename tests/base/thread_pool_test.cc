// The pool covers each index exactly once, in grain-aligned chunks; a thread
// index is never in use by two chunks at once; and a thread that stalls
// holds up only the chunk it holds — the others are claimed by whoever runs.
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace stet {
namespace {

TEST(ThreadPool, ParallelForCoversEachIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 64, 1000, 100000}) {
      for (int64_t grain : {1, 4, 16}) {
        std::vector<std::atomic<int>> hits(n);
        pool.ParallelFor(n, grain, [&](int64_t b, int64_t e) {
          EXPECT_EQ(b % grain, 0);
          EXPECT_TRUE(e % grain == 0 || e == n);
          for (int64_t i = b; i < e; ++i) hits[i]++;
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " " << n;
      }
    }
  }
}

TEST(ThreadPool, AThreadIndexRunsOneChunkAtATime) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> busy(4);
  std::atomic<int> clashes{0}, chunks{0};
  for (int rep = 0; rep < 200; ++rep) {
    pool.ParallelFor(257, 1, [&](int64_t, int64_t, int t) {
      ASSERT_TRUE(t >= 0 && t < 4);
      if (busy[t].fetch_add(1) != 0) clashes++;
      chunks++;
      busy[t].fetch_sub(1);
    });
  }
  EXPECT_EQ(clashes.load(), 0);
  EXPECT_GT(chunks.load(), 200);
}

// A worker that blocks in its first chunk until every other element is done:
// with claimed chunks the caller finishes them; a pool that handed each thread
// a fixed range (or waited for every thread to start) would need the blocked
// worker first, and the wait would time out.
TEST(ThreadPool, AStalledThreadHoldsUpOnlyItsOwnChunk) {
  ThreadPool pool(2);
  for (int rep = 0; rep < 20; ++rep) {
    const int64_t n = 64;
    std::atomic<int64_t> finished{0};
    std::atomic<bool> timed_out{false};
    pool.ParallelFor(n, 1, [&](int64_t b, int64_t e, int t) {
      if (t != 0) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (finished.load() < n - (e - b)) {
          if (std::chrono::steady_clock::now() > deadline) {
            timed_out = true;
            break;
          }
          std::this_thread::yield();
        }
      }
      finished += e - b;
    });
    ASSERT_FALSE(timed_out.load()) << "rep " << rep;
    ASSERT_EQ(finished.load(), n);
  }
}

// More runnable threads than cores (one spinning hog per core beside the
// pool): the pool notices its threads waiting for cores, or its jobs stalling,
// and runs on fewer threads (WidthPolicy; its own tests pin the rules).
TEST(ThreadPool, ABusyMachineNarrowsThePool) {
  ThreadPool pool(2);
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < cores; ++i) {
    hogs.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  std::atomic<int64_t> sink{0};
  bool narrowed = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!narrowed && std::chrono::steady_clock::now() < deadline) {
    pool.ParallelFor(64, 1, [&](int64_t b, int64_t e) {
      int64_t x = 0;
      for (int64_t i = b * 1000; i < e * 1000; ++i) x += i ^ (x >> 3);
      sink += x;
    });
    narrowed = pool.active() < pool.size();
  }
  stop = true;
  for (auto& h : hogs) h.join();
  EXPECT_TRUE(narrowed) << "two pool threads beside " << cores << " spinning hogs kept both";
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
  std::vector<std::atomic<int>> per(3);
  for (int i = 0; i < 10000; ++i)
    pool.Run([&](int index) {
      count++;
      per[index]++;
    });
  EXPECT_EQ(count.load(), 30000);
  for (auto& p : per) EXPECT_EQ(p.load(), 10000);
}

}  // namespace
}  // namespace stet
