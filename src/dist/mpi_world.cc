// JoinWorld/LeaveWorld and the MPI TpComm (mpi_world.h). Each collective is
// the non-blocking MPI call polled with MPI_Test until it completes or its
// deadline passes: spinning first (steps' collectives complete in
// microseconds), then yielding, then sleeping up to 5 ms (a worker idle
// between requests costs next to no CPU). A timed-out request cannot be cancelled in
// MPI, so the group is broken from then on.
#include "dist/mpi_world.h"

#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dist/leader.h"
#include "dist/worker.h"

#if defined(STET_HAVE_MPI)
#include <mpi.h>
#endif

namespace stet::dist {

namespace {

// The world size mpirun (Open MPI, or a PMI launcher such as MPICH's hydra)
// announces in the environment; 1 when not started by one.
int LaunchedSize() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* v = std::getenv(name)) return std::max(1, std::atoi(v));
  }
  return 1;
}

double TimeoutFromEnv() {
  const char* v = std::getenv("STET_TP_TIMEOUT");
  if (v == nullptr || *v == '\0') return 10.0;
  char* end = nullptr;
  const double t = std::strtod(v, &end);
  return end != v && *end == '\0' && t > 0 && t <= 86400 ? t : -1.0;
}

#if defined(STET_HAVE_MPI)

std::string MpiError(int rc) {
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return std::string(msg, len);
}

class MpiComm : public TpComm {
 public:
  MpiComm(MPI_Comm comm, double step_timeout) : comm_(comm), step_timeout_(step_timeout) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  double step_timeout() const override { return step_timeout_; }
  int64_t bytes_sent() const override { return sent_; }
  void Hurry(double seconds) override { hurry_.store(seconds); }
  bool broken() const { return !error_.ok(); }
  MPI_Comm comm() const { return comm_; }

  Status AllGather(const void* mine, const int64_t* counts, void* out, double timeout_s) override {
    return GatherV(mine, counts, out, timeout_s, kEveryRank);
  }

  Status Gather(const void* mine, const int64_t* counts, void* out, double timeout_s) override {
    return GatherV(mine, counts, out, timeout_s, 0);
  }

  Status Broadcast(void* data, int64_t bytes, double timeout_s) override {
    if (!error_.ok()) return error_;
    if (bytes > INT_MAX) return Fail(OutOfRange("tensor parallelism: a broadcast over 2 GiB"));
    MPI_Request req;
    const int rc = MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, 0, comm_, &req);
    if (rank_ == 0) sent_ += bytes * (size_ - 1);
    return Wait(rc, &req, timeout_s, "a broadcast");
  }

 private:
  // MPI counts and displacements are ints: a collective past 2 GiB is refused.
  Status Layout(const int64_t* counts, std::vector<int>* c, std::vector<int>* at) {
    if (!error_.ok()) return error_;
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      if (counts[r] < 0 || total + counts[r] > INT_MAX) {
        return Fail(OutOfRange("tensor parallelism: a collective over 2 GiB (" +
                               std::to_string(total + counts[r]) + " bytes)"));
      }
      at->push_back(static_cast<int>(total));
      c->push_back(static_cast<int>(counts[r]));
      total += counts[r];
    }
    return Status::Ok();
  }

  static constexpr int kEveryRank = -1;

  // The two variable-size collectives differ only in who receives the parts: every rank
  // (root kEveryRank: all-gather) or one root (gather), and so in the bytes this rank sends.
  Status GatherV(const void* mine, const int64_t* counts, void* out, double timeout_s, int root) {
    std::vector<int> c, at;
    STET_RETURN_IF_ERROR(Layout(counts, &c, &at));
    MPI_Request req;
    const char dummy = 0;
    const void* send = c[rank_] > 0 ? mine : &dummy;
    if (root == kEveryRank) {
      const int rc = MPI_Iallgatherv(send, c[rank_], MPI_BYTE, out, c.data(), at.data(), MPI_BYTE,
                                     comm_, &req);
      sent_ += int64_t{c[rank_]} * (size_ - 1);
      return Wait(rc, &req, timeout_s, "an all-gather");
    }
    const int rc = MPI_Igatherv(send, c[rank_], MPI_BYTE, out, c.data(), at.data(), MPI_BYTE, root,
                                comm_, &req);
    if (rank_ != root) sent_ += c[rank_];
    return Wait(rc, &req, timeout_s, "a gather");
  }

  Status Fail(Status st) {
    if (error_.ok()) error_ = st;
    return st;
  }

  Status Wait(int rc, MPI_Request* req, double timeout_s, const char* what) {
    if (rc != MPI_SUCCESS) {
      return Fail(IoError("tensor parallelism: rank " + std::to_string(rank_) + ": " + what +
                          " failed: " + MpiError(rc)));
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (int polls = 0;; ++polls) {
      const double limit = std::min(timeout_s > 0 ? timeout_s : step_timeout_, hurry_.load());
      int done = 0;
      rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        return Fail(IoError("tensor parallelism: rank " + std::to_string(rank_) + ": " + what +
                            " failed: " + MpiError(rc)));
      }
      if (done) return Status::Ok();
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (waited > limit) {
        char secs[32];
        std::snprintf(secs, sizeof secs, "%g", limit);
        return Fail(IoError("tensor parallelism: rank " + std::to_string(rank_) + " waited " +
                            secs + " s in " + what +
                            " for the other ranks of the group: a rank died or stopped "
                            "answering ($STET_TP_TIMEOUT sets the limit)"));
      }
      if (polls < 2000) continue;
      if (waited < 0.002) {
        sched_yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(waited < 0.1 ? 50
                                                              : waited < 1 ? 1000
                                                                           : 5000));
      }
    }
  }

  MPI_Comm comm_;
  double step_timeout_;
  int rank_ = 0, size_ = 1;
  int64_t sent_ = 0;
  std::atomic<double> hurry_{1e30};
  Status error_;
};

std::unique_ptr<MpiComm> g_world;

#endif  // STET_HAVE_MPI

}  // namespace

bool BuiltWithMpi() {
#if defined(STET_HAVE_MPI)
  return true;
#else
  return false;
#endif
}

TpComm* World() {
#if defined(STET_HAVE_MPI)
  return g_world.get();
#else
  return nullptr;
#endif
}

Result<TpComm*> JoinWorld(int* argc, char*** argv) {
  const int launched = LaunchedSize();
  if (launched <= 1) return static_cast<TpComm*>(nullptr);
#if !defined(STET_HAVE_MPI)
  (void)argc;
  (void)argv;
  return Unimplemented("this stet was built without MPI, so mpirun -np " +
                       std::to_string(launched) +
                       " cannot split a model across processes (install libopenmpi-dev, "
                       "e.g. with scripts/setup, and rebuild)");
#else
  const double timeout = TimeoutFromEnv();
  if (timeout < 0) {
    return InvalidArgument("$STET_TP_TIMEOUT must be a number of seconds in (0, 86400], not '" +
                           std::string(std::getenv("STET_TP_TIMEOUT")) + "'");
  }
  // MPI's own threads start in MPI_Init: they get a mask that blocks the
  // shutdown signals, so those go to stet's threads (serve's sigwait), never
  // to a thread of MPI's whose default action would kill the process.
  sigset_t block, old;
  sigemptyset(&block);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&block, s);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  int provided = 0;
  const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != MPI_SUCCESS) return IoError("MPI_Init_thread failed: " + MpiError(rc));
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return Unimplemented(
        "this MPI library does not allow calls from a thread other than main "
        "(MPI_THREAD_SERIALIZED), which the engine needs");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  double t = timeout;  // rank 0's limit for every rank
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  g_world = std::make_unique<MpiComm>(MPI_COMM_WORLD, t);
  return static_cast<TpComm*>(g_world.get());
#endif
}

int LeaveWorld(int exit_code) {
#if defined(STET_HAVE_MPI)
  if (!g_world) return exit_code;
  if (g_world->rank() == 0 && !g_world->broken()) (void)QuitWorkers(*g_world);
  if (g_world->broken()) {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code != 0 ? exit_code : 1);
  }
  g_world.reset();
  MPI_Finalize();
#endif
  return exit_code;
}

int WorkerMain() {
  TpComm* world = World();
  if (world == nullptr) return 1;
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  Status st = RunWorker(*world);
  if (!st.ok()) {
    std::fprintf(stderr, "stet: rank %d: %s\n", world->rank(), st.ToString().c_str());
  }
  return LeaveWorld(st.ok() ? 0 : 1);
}

}  // namespace stet::dist
