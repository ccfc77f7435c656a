// A fixed-size thread pool. Work is split by output rows/columns/heads only —
// never along a reduction (numerics rule R2) — so neither the thread count nor
// which thread runs which piece can change a result bit. The caller is thread 0.
//
// Pieces are claimed, not assigned: each call splits its range into chunks,
// deals each thread a contiguous share, and every thread (the caller too) runs
// its own share's chunks and then steals unclaimed ones from the others' ends;
// the call returns when all chunks are done. A thread that is not running —
// the core is busy with another process — has its share taken by the others,
// so the call never waits for it to wake up.
// And when jobs keep waiting for a worker that was descheduled while holding a
// chunk, the pool runs the next jobs on the caller alone for a while, so more
// threads than free cores degrades to one thread's speed, not far below it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "base/function_ref.h"

namespace stet {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Splits [0, n) into chunks that are multiples of `grain` (the last one may be
  // shorter) and runs fn(begin, end, thread) for each, in any order, on any
  // threads; `thread` in [0, size()) names the thread running it (for
  // per-thread scratch: no two chunks run on one thread at once). fn is
  // referenced, not copied: no allocation per call.
  void ParallelFor(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t, int)> fn);
  void ParallelFor(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
    ParallelFor(n, grain, [&](int64_t b, int64_t e, int) { fn(b, e); });
  }

  // Runs fn(i) once for each i in [0, size()), on any threads.
  void Run(FunctionRef<void(int index)> fn) {
    ParallelFor(n_threads_, 1, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) fn(static_cast<int>(i));
    });
  }

 private:
  // Each thread's share of a job's chunks, claimed from the front by its owner
  // and from the back by thieves: generation (32 bits) | next (16) | end (16).
  struct alignas(64) Share {
    std::atomic<uint64_t> word{0};
  };
  static constexpr int64_t kMaxChunks = 0xffff;
  void WorkerLoop(int index);
  // Runs chunks of job `gen`: the thread's own share first, then steals.
  void Drain(uint64_t gen, int thread);
  bool Claim(Share& share, uint64_t gen, bool from_back, int64_t* chunk);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::vector<Share> shares_;
  // The running job, valid while any chunk of it is claimed but not done.
  const FunctionRef<void(int64_t, int64_t, int)>* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 0, n_chunks_ = 0;
  int solo_left_ = 0, solo_backoff_ = 64;  // caller-only jobs (straggler back-off)
  alignas(64) std::atomic<uint64_t> gen_{0};
  alignas(64) std::atomic<int64_t> done_{0};  // chunks done, added once per thread per job
  std::atomic<int> sleepers_{0};
  std::atomic<bool> park_{false};  // the caller runs jobs alone for now: workers sleep
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

// Splits [0, n) for thread t of n_threads in multiples of grain (static ranges,
// for callers that need a split fixed by counts alone, e.g. the adaptive mode).
void PartitionRange(int64_t n, int64_t grain, int t, int n_threads, int64_t* begin, int64_t* end);

}  // namespace stet
