// LocalGroup's collectives: every rank posts its buffer, a barrier, every rank
// copies what it needs from the posted buffers, a second barrier (so no buffer
// is reused before everyone has read it). A barrier that times out breaks the
// group for every rank, as a lost MPI rank does.
#include "dist/local_group.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace stet::dist {

struct LocalGroup::Shared {
  explicit Shared(int n, double t)
      : n_ranks(n), step_timeout(t), posted(n, nullptr), dead(n, false) {}
  const int n_ranks;
  const double step_timeout;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  bool broken = false;
  std::vector<const void*> posted;
  std::vector<bool> dead;
  double hurry = 1e30;  // Hurry: every wait's limit from then on

  Status Barrier(int rank, double timeout_s) {
    std::unique_lock<std::mutex> lock(mu);
    if (dead[rank]) return IoError("tensor parallelism: rank " + std::to_string(rank) + " is dead");
    if (broken) return Broken();
    const uint64_t gen = generation;
    if (++arrived == n_ranks) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return Status::Ok();
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto limit = std::chrono::duration<double>(timeout_s > 0 ? timeout_s : step_timeout);
    // Wakes when the barrier opens, the group breaks, or Hurry lowers the limit.
    auto over = [&] {
      limit = std::min(limit, std::chrono::duration<double>(hurry));
      return std::chrono::steady_clock::now() - t0 >= limit;
    };
    while (generation == gen && !broken && !over()) {
      cv.wait_for(lock, std::min(limit, std::chrono::duration<double>(0.05)));
    }
    if (generation == gen && !broken) {
      broken = true;
      cv.notify_all();
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", limit.count());
      return IoError("tensor parallelism: rank " + std::to_string(rank) + " waited more than " +
                     secs + " s for the other ranks of the group (a rank is gone)");
    }
    return broken ? Broken() : Status::Ok();
  }
  static Status Broken() {
    return IoError("tensor parallelism: the group is broken (a rank stopped answering)");
  }
};

class LocalGroup::Comm : public TpComm {
 public:
  Comm(std::shared_ptr<Shared> s, int rank) : s_(std::move(s)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return s_->n_ranks; }
  double step_timeout() const override { return s_->step_timeout; }
  int64_t bytes_sent() const override { return sent_; }
  void Hurry(double seconds) override {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->hurry = seconds;
    s_->cv.notify_all();
  }

  Status AllGather(const void* mine, const int64_t* counts, void* out, double timeout_s) override {
    return Exchange(mine, timeout_s, [&] {
      int64_t at = 0;
      for (int r = 0; r < s_->n_ranks; ++r) {
        std::memcpy(static_cast<uint8_t*>(out) + at, s_->posted[r], counts[r]);
        at += counts[r];
      }
      sent_ += counts[rank_] * (s_->n_ranks - 1);
    });
  }

  Status Gather(const void* mine, const int64_t* counts, void* out, double timeout_s) override {
    return Exchange(mine, timeout_s, [&] {
      if (rank_ == 0) {
        int64_t at = 0;
        for (int r = 0; r < s_->n_ranks; ++r) {
          std::memcpy(static_cast<uint8_t*>(out) + at, s_->posted[r], counts[r]);
          at += counts[r];
        }
      } else {
        sent_ += counts[rank_];
      }
    });
  }

  Status Broadcast(void* data, int64_t bytes, double timeout_s) override {
    return Exchange(data, timeout_s, [&] {
      if (rank_ != 0) {
        std::memcpy(data, s_->posted[0], bytes);
      } else {
        sent_ += bytes * (s_->n_ranks - 1);
      }
    });
  }

 private:
  template <typename F>
  Status Exchange(const void* mine, double timeout_s, F&& copy) {
    {
      std::lock_guard<std::mutex> lock(s_->mu);
      s_->posted[rank_] = mine;
    }
    STET_RETURN_IF_ERROR(s_->Barrier(rank_, timeout_s));
    copy();
    return s_->Barrier(rank_, timeout_s);
  }

  std::shared_ptr<Shared> s_;
  const int rank_;
  int64_t sent_ = 0;
};

LocalGroup::LocalGroup(int n, double step_timeout_s)
    : shared_(std::make_shared<Shared>(n, step_timeout_s)) {
  for (int r = 0; r < n; ++r) comms_.push_back(std::make_unique<Comm>(shared_, r));
}

LocalGroup::~LocalGroup() = default;

TpComm& LocalGroup::comm(int rank) { return *comms_[rank]; }

void LocalGroup::Kill(int rank) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->dead[rank] = true;
  shared_->cv.notify_all();
}

}  // namespace stet::dist
