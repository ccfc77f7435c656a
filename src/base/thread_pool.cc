#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>

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
// per job would cost more than the job: idle workers poll first (pause), then
// yield the core (others may need it when cores are oversubscribed), then sleep.
constexpr int kPausePolls = 2000;
constexpr int kYieldPolls = 20000;
// Chunks per thread: enough that a descheduled thread's share can be taken in
// pieces, few enough that claiming stays cheap (claims hit the thread's own
// cache line unless someone steals).
constexpr int64_t kChunksPerThread = 8;
// Straggler: the caller waited this much longer than the job's own work for a
// piece another thread held.
constexpr std::chrono::microseconds kStraggle{100};

// The run-queue wait of whichever thread calls ParallelFor.
const RunDelay& CallerDelay() {
  thread_local RunDelay delay = RunDelay::ForThisThread();
  return delay;
}

inline uint64_t Gen(uint64_t w) { return w >> 32; }
inline int64_t Next(uint64_t w) { return static_cast<int64_t>((w >> 16) & 0xffff); }
inline int64_t End(uint64_t w) { return static_cast<int64_t>(w & 0xffff); }
inline uint64_t Word(uint64_t gen, int64_t next, int64_t end) {
  return (gen << 32) | (static_cast<uint64_t>(next) << 16) | static_cast<uint64_t>(end);
}
}  // namespace

void PartitionRange(int64_t n, int64_t grain, int t, int n_threads, int64_t* begin, int64_t* end) {
  if (grain < 1) grain = 1;
  const int64_t n_grains = (n + grain - 1) / grain;
  const int64_t per = n_grains / n_threads;
  const int64_t extra = n_grains % n_threads;
  const int64_t g0 = t * per + (t < extra ? t : extra);
  const int64_t g1 = g0 + per + (t < extra ? 1 : 0);
  *begin = std::min(n, g0 * grain);
  *end = std::min(n, g1 * grain);
}

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads < 1 ? 1 : n_threads),
      shares_(static_cast<size_t>(n_threads_)),
      delays_(static_cast<size_t>(n_threads_)),
      width_(n_threads_),
      active_(n_threads_) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
  while (ready_.load(std::memory_order_acquire) < n_threads_ - 1) std::this_thread::yield();
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    gen_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

// A successful claim of a chunk of generation `gen`: the caller of ParallelFor
// waits for it, so fn_, n_ and chunk_ stay those of that job until it is done.
bool ThreadPool::Claim(Share& share, uint64_t gen, bool from_back, int64_t* chunk) {
  uint64_t w = share.word.load(std::memory_order_acquire);
  for (;;) {
    if (Gen(w) != gen || Next(w) >= End(w)) return false;
    const uint64_t claimed = from_back ? w - 1 : w + (uint64_t{1} << 16);
    if (share.word.compare_exchange_weak(w, claimed, std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
      *chunk = from_back ? End(w) - 1 : Next(w);
      return true;
    }
  }
}

void ThreadPool::Drain(uint64_t gen, int thread) {
  int64_t ran = 0, chunk;
  auto run = [&] {
    const int64_t b = chunk * chunk_;
    (*fn_)(b, std::min(n_, b + chunk_), thread);
    ++ran;
  };
  while (Claim(shares_[thread], gen, false, &chunk)) run();
  for (int k = 1; k < n_threads_; ++k) {
    Share& victim = shares_[(thread + k) % n_threads_];
    while (Claim(victim, gen, true, &chunk)) run();
  }
  if (ran > 0) done_.fetch_add(ran, std::memory_order_acq_rel);
}

void ThreadPool::WorkerLoop(int index) {
  delays_[index] = RunDelay::ForThisThread();
  ready_.fetch_add(1, std::memory_order_release);
  uint64_t seen = 0;
  for (;;) {
    int polls = 0;
    uint64_t gen;
    while ((gen = gen_.load(std::memory_order_acquire)) == seen) {
      ++polls;
      // A worker left out while the machine is busy would only take CPU time
      // from those that run: it sleeps until a job wakes it.
      const bool parked = index >= active_.load(std::memory_order_relaxed);
      if (polls < kPausePolls && !parked) {
        STET_PAUSE();
      } else if (polls < kPausePolls + kYieldPolls && !parked) {
        std::this_thread::yield();
      } else {
        sleepers_.fetch_add(1);
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return gen_.load() != seen || stop_.load(); });
        sleepers_.fetch_sub(1);
        polls = 0;
      }
    }
    seen = gen;
    if (stop_.load()) return;
    if (index < active_.load(std::memory_order_relaxed)) Drain(gen, index);
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             FunctionRef<void(int64_t, int64_t, int)> fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int64_t n_grains = (n + grain - 1) / grain;
  if (n_threads_ == 1 || n_grains == 1) {
    fn(0, n, 0);
    return;
  }
  using Clock = WidthPolicy::Clock;
  const auto t_start = Clock::now();
  const auto delays = [this] { return RunDelayNanos(); };
  width_.Tick(t_start, delays, &CallerDelay());
  const int active = width_.active();
  active_.store(active, std::memory_order_relaxed);
  if (active == 1) {
    fn(0, n, 0);
    return;
  }
  const int64_t target = std::min<int64_t>(kChunksPerThread * active, kMaxChunks);
  chunk_ = (n_grains + target - 1) / target * grain;
  n_ = n;
  fn_ = &fn;
  n_chunks_ = (n + chunk_ - 1) / chunk_;
  done_.store(0, std::memory_order_relaxed);
  // Deal the shares, then publish the generation (release: whoever sees it
  // sees the shares and the fields above).
  const uint64_t gen = gen_.load(std::memory_order_relaxed) + 1;
  for (int t = 0; t < n_threads_; ++t) {
    int64_t b = 0, e = 0;
    if (t < active) PartitionRange(n_chunks_, 1, t, active, &b, &e);
    shares_[t].word.store(Word(gen, b, e), std::memory_order_relaxed);
  }
  gen_.store(gen, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  Drain(gen, 0);
  if (done_.load(std::memory_order_acquire) == n_chunks_) {
    fn_ = nullptr;
    return;
  }
  const auto t_drained = Clock::now();
  for (int polls = 0; done_.load(std::memory_order_acquire) != n_chunks_; ++polls) {
    if (polls < kPausePolls) {
      STET_PAUSE();
    } else {
      std::this_thread::yield();
    }
  }
  fn_ = nullptr;
  // A worker still holding a chunk long after the caller ran out of work was
  // (almost always) descheduled: the core is busy with another process, and
  // waiting for it costs more than the help it gives.
  const auto t_end = Clock::now();
  if (t_end - t_drained > 4 * (t_drained - t_start) + kStraggle) {
    width_.Stalled(t_end, delays, &CallerDelay());
  }
}

int64_t ThreadPool::RunDelayNanos() const {
  int64_t sum = CallerDelay().Nanos();
  if (sum < 0) return -1;
  for (int i = 1; i < n_threads_; ++i) {
    const int64_t d = delays_[i].Nanos();
    if (d < 0) return -1;
    sum += d;
  }
  return sum;
}

}  // namespace stet
