#include "base/thread_pool.h"

#include "base/check.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define STET_PAUSE() _mm_pause()
#else
#define STET_PAUSE() std::this_thread::yield()
#endif

namespace stet {

namespace {
// A decode step issues hundreds of small jobs, and a condition-variable wake-up
// per job would cost more than the job: poll first (pause), then yield the core
// (other threads of the pool may need it when cores are oversubscribed), then sleep.
constexpr int kPausePolls = 2000;
constexpr int kYieldPolls = 20000;
}  // namespace

void PartitionRange(int64_t n, int64_t grain, int t, int n_threads, int64_t* begin,
                    int64_t* end) {
  if (grain < 1) grain = 1;
  const int64_t n_grains = (n + grain - 1) / grain;
  const int64_t per = n_grains / n_threads;
  const int64_t extra = n_grains % n_threads;
  const int64_t g0 = t * per + (t < extra ? t : extra);
  const int64_t g1 = g0 + per + (t < extra ? 1 : 0);
  *begin = std::min(n, g0 * grain);
  *end = std::min(n, g1 * grain);
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    int polls = 0;
    while (generation_.load(std::memory_order_acquire) == seen) {
      ++polls;
      if (polls < kPausePolls) {
        STET_PAUSE();
        continue;
      }
      if (polls < kPausePolls + kYieldPolls) {
        std::this_thread::yield();
        continue;
      }
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    (*job_)(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::Run(FunctionRef<void(int)> fn) {
  if (n_threads_ == 1) {
    fn(0);
    return;
  }
  job_ = &fn;
  pending_.store(n_threads_ - 1, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  cv_.notify_all();
  fn(0);
  for (int polls = 0; pending_.load(std::memory_order_acquire) != 0; ++polls) {
    if (polls < kPausePolls) {
      STET_PAUSE();
    } else {
      std::this_thread::yield();
    }
  }
  job_ = nullptr;
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  Run([&](int t) {
    int64_t b, e;
    PartitionRange(n, grain, t, n_threads_, &b, &e);
    if (b < e) fn(b, e);
  });
}

}  // namespace stet
