// A fixed-size thread pool with static partitioning. Work is split by output
// rows/columns/heads only — never along a reduction (numerics rule R2) — so the
// thread count cannot change any result bit. The caller is thread 0.
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

  // Runs fn(thread_index) once on each of size() threads; returns when all
  // finish. fn is referenced, not copied: no allocation per call.
  void Run(FunctionRef<void(int thread_index)> fn);

  // Splits [0, n) into size() contiguous ranges (some possibly empty), each a
  // multiple of `grain` except the last, and runs fn(begin, end) on each.
  void ParallelFor(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn);

 private:
  void WorkerLoop(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  const FunctionRef<void(int)>* job_ = nullptr;  // the running Run's fn
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

// Splits [0, n) for thread t of n_threads in multiples of grain.
void PartitionRange(int64_t n, int64_t grain, int t, int n_threads, int64_t* begin, int64_t* end);

}  // namespace stet
