// What rank 0 of a tensor-parallel group tells the other ranks, and how it
// goes over TpComm::Broadcast: fixed 1 KiB frames (a kind and, inline, a
// payload that fits; a larger one follows in a second broadcast), and the
// payloads: the group's configuration (Start) and each forward step (the
// batch and the block tables it reads). Owns the invariant that a worker sees
// exactly the batch and KV layout rank 0's forward pass runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/status.h"
#include "kernels/adaptive.h"
#include "model/forward.h"
#include "model/paged_kv.h"

namespace stet::dist {

enum class FrameKind : uint32_t {
  kStart = 1,  // load the model shard (payload: GroupConfig), then report
  kStep = 2,   // run one forward step (payload: StepDesc)
  kPing = 3,   // prove you are alive (an all-gather of one byte follows)
  kEnd = 4,    // the engine is gone: drop its forward pass and KV cache
  kQuit = 5,   // exit
  kStats = 6,  // report RankStats (an all-gather follows)
};
const char* FrameKindName(FrameKind k);

struct GroupConfig {
  std::string model_path;  // the same path on every machine (or a shared mount)
  int max_ctx = 0;         // the forward pass's RoPE table
  NumericsMode numerics = NumericsMode::kInvariant;
  Isa isa = Isa::kScalar;  // rank 0's; a worker whose CPU lacks it uses its own best
  int n_threads = 1;
};

// One forward step as the workers need it: the KV pool's geometry, the batch,
// and for each sequence in it the blocks covering its positions.
struct StepDesc {
  int n_blocks = 0, block_size = 0, n_slots = 0;
  DType kv_type = DType::kF16;
  std::vector<BatchToken> batch;
  std::vector<std::pair<int32_t, std::vector<int32_t>>> tables;  // (slot, blocks)
};
StepDesc DescribeStep(const std::vector<BatchToken>& batch, const PagedKvCache& kv);

std::string EncodeConfig(const GroupConfig& c);
Result<GroupConfig> DecodeConfig(const std::string& bytes);
std::string EncodeStep(const StepDesc& s);
Result<StepDesc> DecodeStep(const std::string& bytes);

// Rank 0: one frame (and its payload) to every rank.
Status SendFrame(TpComm& comm, FrameKind kind, const std::string& payload);
// The other ranks: the next frame, waiting at most timeout_s.
struct Frame {
  FrameKind kind;
  std::string payload;
};
Result<Frame> ReceiveFrame(TpComm& comm, double timeout_s);

// A rank's answer to Start, gathered on every rank (fixed size).
struct LoadReport {
  bool ok = false;
  std::string sha256;   // of the model file this rank loaded
  std::string host;     // where the rank runs
  std::string message;  // the error, when !ok
};
// Every rank's report, by rank (waits at most timeout_s: loading takes long).
Result<std::vector<LoadReport>> GatherReports(TpComm& comm, const LoadReport& mine,
                                              double timeout_s);

// This machine's name (error messages say where a rank runs).
std::string HostName();
// This process's peak resident memory (VmHWM), 0 where unknown.
int64_t PeakRssBytes();

// What each rank reports for benchmarks: payload bytes it has sent, peak RSS.
struct RankStats {
  int64_t bytes_sent = 0;
  int64_t peak_rss_bytes = 0;
};
// Every rank's stats, by rank (an all-gather after a kStats frame).
Result<std::vector<RankStats>> GatherStats(TpComm& comm);

// How long rank 0 waits for the workers to load and hash their files.
constexpr double kLoadTimeoutS = 1800;
// Rank 0 pings an idle group this often; a worker inside an engine that hears
// nothing for kWorkerIdleLimitS assumes rank 0 is gone.
constexpr double kHeartbeatS = 1.0;
constexpr double kWorkerIdleLimitS = 120;
// A worker between engines waits for rank 0 this long.
constexpr double kWorkerPatienceS = 24 * 3600.0;

}  // namespace stet::dist
