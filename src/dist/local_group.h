// LocalGroup: a tensor-parallel group whose ranks are threads of one process,
// exchanging through shared memory (TpComm). The same collectives, the same
// order and the same timeouts as MPI (dist/mpi_world.h), without MPI: the
// tests split models across any number of ranks in-process, and a rank that
// stops answering (its thread returns) shows how the others fail.
#pragma once

#include <memory>
#include <vector>

#include "model/tensor_parallel.h"

namespace stet::dist {

class LocalGroup {
 public:
  // n ranks; a collective waits at most step_timeout_s (by default) for the others.
  explicit LocalGroup(int n, double step_timeout_s = 30);
  ~LocalGroup();
  LocalGroup(const LocalGroup&) = delete;
  LocalGroup& operator=(const LocalGroup&) = delete;

  int size() const { return static_cast<int>(comms_.size()); }
  TpComm& comm(int rank);
  // Rank `rank` dies: its collectives fail at once and it never reaches
  // another barrier, so the others time out (a crashed process, for tests).
  void Kill(int rank);

 private:
  struct Shared;
  class Comm;
  std::shared_ptr<Shared> shared_;
  std::vector<std::unique_ptr<TpComm>> comms_;
};

}  // namespace stet::dist
