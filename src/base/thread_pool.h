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
// On a busy machine (more runnable threads than cores) spinning workers take
// cores from the caller, and a worker descheduled while it holds a chunk stalls
// the job: the pool measures both (its threads' run-queue wait; stalled jobs)
// and runs on fewer threads for a while, so more threads than free cores
// degrades to the free cores' speed, not below it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "base/function_ref.h"
#include "base/run_delay.h"
#include "base/width_policy.h"

namespace stet {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // How many threads take part in the next job (fewer than size() while the
  // machine is busy; see WidthPolicy).
  int active() const { return active_.load(std::memory_order_relaxed); }
  // The run-queue wait of the calling thread and every worker (sleeping
  // workers add none), in ns, or -1 where the kernel does not say: how long
  // this pool's threads have waited for a core since they started.
  int64_t RunDelayNanos() const;

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
  std::vector<RunDelay> delays_;  // per worker (index 0 unused: the caller's is thread-local)
  WidthPolicy width_;             // caller side: how many threads take part
  std::atomic<int> ready_{0};     // workers that have opened their RunDelay
  alignas(64) std::atomic<int> active_{1};  // threads taking part; workers >= it sleep
  alignas(64) std::atomic<uint64_t> gen_{0};
  alignas(64) std::atomic<int64_t> done_{0};  // chunks done, added once per thread per job
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

// Splits [0, n) for thread t of n_threads in multiples of grain (static ranges,
// for callers that need a split fixed by counts alone, e.g. the adaptive mode).
void PartitionRange(int64_t n, int64_t grain, int t, int n_threads, int64_t* begin, int64_t* end);

}  // namespace stet
