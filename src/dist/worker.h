// The side of a tensor-parallel group that every rank but 0 runs: it waits
// for rank 0's frames and mirrors them (loads its model shard on Start, runs
// each step's forward pass on its rows and heads, answers pings), so rank 0's
// engine can schedule, sample and answer as one process would.
#pragma once

#include "base/cpu_features.h"
#include "base/status.h"
#include "model/tensor_parallel.h"

namespace stet::dist {

// Serves rank 0's engines (one after another) until rank 0 sends Quit: Ok.
// An error when a collective fails or rank 0 goes silent (kWorkerIdleLimitS
// inside an engine): the group is broken and the process should exit non-zero.
Status RunWorker(TpComm& comm);

// The kernel path a worker runs for rank 0's `wanted` one: the same when this CPU has it
// (Isa::kAuto always: the rows measured fastest on this shard), else DefaultIsa(). Any
// path gives the same bits, so ranks on unlike machines still agree.
Isa WorkerIsa(Isa wanted);

}  // namespace stet::dist
