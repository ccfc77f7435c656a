// The MPI world of a process that mpirun started with more than one rank:
// one TpComm over MPI_COMM_WORLD (non-blocking collectives polled against a
// deadline, MPI_ERRORS_RETURN: a rank that dies fails the others' collectives
// within the step timeout instead of hanging them), joined first thing in
// main and left last thing. A process started any other way makes no MPI call.
#pragma once

#include "base/status.h"
#include "model/tensor_parallel.h"

namespace stet::dist {

// Whether this build has MPI (CMake found it).
bool BuiltWithMpi();

// When the environment says mpirun started this process in a world of more
// than one rank: MPI_Init_thread (MPI_THREAD_SERIALIZED: the engine thread
// makes the calls) and the world's comm, whose step timeout is rank 0's
// $STET_TP_TIMEOUT (seconds, default 10), broadcast to all. Otherwise null.
// An error when this build has no MPI, or MPI cannot start.
Result<TpComm*> JoinWorld(int* argc, char*** argv);
// The comm JoinWorld made, or null.
TpComm* World();

// Ends the world and returns the exit code to use: on rank 0 a sound group's
// workers are told to quit, then MPI_Finalize; a broken group is aborted
// (MPI_Abort: every rank exits with a non-zero code). No-op without a world.
int LeaveWorld(int exit_code);

// What every rank but 0 runs instead of its command: RunWorker until rank 0
// quits, with SIGINT/SIGTERM ignored (rank 0 decides when the group stops).
// Returns the process's exit code (after LeaveWorld).
int WorkerMain();

}  // namespace stet::dist
