// How long a thread has waited, runnable, for a core: Linux's per-thread
// schedstat "run delay". It is the direct sign of an oversubscribed machine
// (another process wants the cores our threads spin on), which the thread
// pool uses to run on fewer threads while the machine is busy.
#pragma once

#include <cstdint>

namespace stet {

class RunDelay {
 public:
  // Opens the calling thread's counter; where the kernel has none (not Linux,
  // schedstats off, /proc not mounted) every read says -1.
  static RunDelay ForThisThread();
  RunDelay() = default;
  RunDelay(RunDelay&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  RunDelay& operator=(RunDelay&& o) noexcept;
  RunDelay(const RunDelay&) = delete;
  RunDelay& operator=(const RunDelay&) = delete;
  ~RunDelay();

  bool ok() const { return fd_ >= 0; }
  // Nanoseconds the thread has spent waiting on a run queue since it started,
  // or -1. Any thread may read any thread's counter.
  int64_t Nanos() const;

 private:
  explicit RunDelay(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace stet
