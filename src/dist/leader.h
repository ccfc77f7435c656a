// Rank 0's side of a tensor-parallel group, for one engine (or one benchmark):
// it starts the other ranks' forward passes on their shards, sends each step
// before rank 0's own Forward::Run, keeps an idle group proven alive, and ends
// it. Once a collective fails the group is broken for good: every later call
// returns that first error at once (the engine then fails what is in flight).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "dist/wire.h"

namespace stet::dist {

class Leader {
 public:
  explicit Leader(TpComm& comm) : comm_(comm) {}
  ~Leader() { End(); }
  Leader(const Leader&) = delete;
  Leader& operator=(const Leader&) = delete;

  TpComm& comm() { return comm_; }
  int size() const { return comm_.size(); }
  // Tells the workers to load their shards of config.model_path (and to hash the file).
  Status Start(const GroupConfig& config);
  // Waits for every rank's report: ok when each loaded its shard of a file
  // whose SHA-256 is rank 0's `sha256` (a worker with another file would
  // compute other numbers under the same fingerprint). On error the workers
  // are told to end.
  Status AwaitLoaded(const std::string& sha256);
  // The step rank 0 is about to run: its batch and the block tables it reads.
  Status Step(const std::vector<BatchToken>& batch, const PagedKvCache& kv);
  // While idle: a ping when none has gone for kHeartbeatS (a dead rank shows
  // within that plus the step timeout, not at the next request).
  Status Heartbeat();
  // Every rank's bytes sent and peak RSS (benchmarks).
  Result<std::vector<RankStats>> Stats();
  // The engine is done (no-op when not started or broken).
  void End();
  // The error that broke the group, or Ok.
  const Status& error() const { return error_; }

 private:
  Status Check(Status st);
  void Touch() { last_ = std::chrono::steady_clock::now(); }

  TpComm& comm_;
  bool started_ = false;
  Status error_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Rank 0 at exit when the group is sound: the workers return from RunWorker.
Status QuitWorkers(TpComm& comm);

}  // namespace stet::dist
