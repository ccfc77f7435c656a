// Leader (leader.h): each call is one frame to the workers (plus, for Start
// and Ping, an all-gather of their answers); the first failure is kept.
#include "dist/leader.h"

namespace stet::dist {

Status Leader::Check(Status st) {
  if (!st.ok() && error_.ok()) error_ = st;
  Touch();
  return st;
}

Status Leader::Start(const GroupConfig& config) {
  if (!error_.ok()) return error_;
  started_ = true;
  return Check(SendFrame(comm_, FrameKind::kStart, EncodeConfig(config)));
}

Status Leader::AwaitLoaded(const std::string& sha256) {
  if (!error_.ok()) return error_;
  LoadReport mine{true, sha256, HostName(), ""};
  auto reports = GatherReports(comm_, mine, kLoadTimeoutS);
  if (!reports.ok()) return Check(reports.status());
  std::string problems;
  for (int r = 1; r < comm_.size(); ++r) {
    const LoadReport& rep = (*reports)[r];
    const std::string who = "rank " + std::to_string(r) + " (" + rep.host + ")";
    if (!rep.ok) {
      problems += "; " + who + ": " + rep.message;
    } else if (rep.sha256 != sha256) {
      problems += "; " + who + " loaded a different file (SHA-256 " + rep.sha256 +
                  ", rank 0's is " + sha256 + ")";
    }
  }
  if (problems.empty()) return Status::Ok();
  End();
  return InvalidArgument("tensor parallelism: the group could not start" + problems +
                         " (every rank needs the same model file)");
}

Status Leader::Step(const std::vector<BatchToken>& batch, const PagedKvCache& kv) {
  if (!error_.ok()) return error_;
  return Check(SendFrame(comm_, FrameKind::kStep, EncodeStep(DescribeStep(batch, kv))));
}

Status Leader::Heartbeat() {
  if (!error_.ok()) return error_;
  if (std::chrono::steady_clock::now() - last_ < std::chrono::duration<double>(kHeartbeatS)) {
    return Status::Ok();
  }
  STET_RETURN_IF_ERROR(Check(SendFrame(comm_, FrameKind::kPing, "")));
  const int n = comm_.size();
  std::vector<int64_t> counts(n, 1);
  std::string acks(n, '\0');
  const char mine = 1;
  return Check(comm_.AllGather(&mine, counts.data(), acks.data()));
}

Result<std::vector<RankStats>> Leader::Stats() {
  if (!error_.ok()) return error_;
  STET_RETURN_IF_ERROR(Check(SendFrame(comm_, FrameKind::kStats, "")));
  auto stats = GatherStats(comm_);
  if (!stats.ok()) return Check(stats.status());
  return stats;
}

void Leader::End() {
  if (!started_ || !error_.ok()) return;
  started_ = false;
  (void)Check(SendFrame(comm_, FrameKind::kEnd, ""));
}

Status QuitWorkers(TpComm& comm) { return SendFrame(comm, FrameKind::kQuit, ""); }

}  // namespace stet::dist
