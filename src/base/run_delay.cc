// Reads /proc/thread-self/schedstat: "<cpu ns> <run-queue wait ns> <slices>".
// The file descriptor keeps naming the thread that opened it, so one open per
// thread and a pread per sample (a few microseconds) is all it costs.
#include "base/run_delay.h"

#include <cstdlib>

#if defined(__linux__)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace stet {

RunDelay RunDelay::ForThisThread() {
#if defined(__linux__)
  return RunDelay(::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC));
#else
  return RunDelay();
#endif
}

RunDelay& RunDelay::operator=(RunDelay&& o) noexcept {
  if (this != &o) {
    this->~RunDelay();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

RunDelay::~RunDelay() {
#if defined(__linux__)
  if (fd_ >= 0) ::close(fd_);
#endif
}

int64_t RunDelay::Nanos() const {
#if defined(__linux__)
  if (fd_ < 0) return -1;
  char buf[96];
  const ssize_t got = ::pread(fd_, buf, sizeof(buf) - 1, 0);
  if (got <= 0) return -1;
  buf[got] = '\0';
  char* end = nullptr;
  std::strtoull(buf, &end, 10);  // on-CPU time: not needed
  if (end == buf) return -1;
  const char* wait = end;
  const unsigned long long ns = std::strtoull(wait, &end, 10);
  return end == wait ? -1 : static_cast<int64_t>(ns);
#else
  return -1;
#endif
}

}  // namespace stet
