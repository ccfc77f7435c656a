// RunWorker (worker.h). A worker keeps the last model shard it loaded between
// engines (stet-logits starts several on one file); its KV pool is remade when
// rank 0's geometry changes (a benchmark's caches differ from test to test).
// Every position is written before it is read (R3), so a reused pool's old
// contents never reach a result.
#include "dist/worker.h"

#include <cstdio>
#include <memory>

#include "base/hash.h"
#include "base/thread_pool.h"
#include "dist/wire.h"

namespace stet::dist {

namespace {

class Worker {
 public:
  explicit Worker(TpComm& comm) : comm_(comm) {}

  Status Run() {
    for (;;) {
      const double wait = forward_ ? kWorkerIdleLimitS : kWorkerPatienceS;
      auto frame = ReceiveFrame(comm_, wait);
      if (!frame.ok()) return frame.status();
      switch (frame->kind) {
        case FrameKind::kStart:
          STET_RETURN_IF_ERROR(Start(frame->payload));
          break;
        case FrameKind::kStep:
          STET_RETURN_IF_ERROR(Step(frame->payload));
          break;
        case FrameKind::kPing: {
          const int n = comm_.size();
          std::vector<int64_t> counts(n, 1);
          std::string acks(n, '\0');
          const char mine = 1;
          STET_RETURN_IF_ERROR(comm_.AllGather(&mine, counts.data(), acks.data()));
          break;
        }
        case FrameKind::kEnd:
          forward_.reset();
          kv_.reset();
          pool_.reset();
          break;
        case FrameKind::kStats: {
          auto stats = GatherStats(comm_);
          if (!stats.ok()) return stats.status();
          break;
        }
        case FrameKind::kQuit:
          return Status::Ok();
      }
    }
  }

 private:
  // Loads (or keeps) the shard, hashes the file, and reports to the group.
  Status Start(const std::string& payload) {
    LoadReport rep{false, "", HostName(), ""};
    Status st = Load(payload, &rep);
    if (!st.ok()) rep.message = st.ToString();
    rep.ok = st.ok();
    auto reports = GatherReports(comm_, rep, kLoadTimeoutS);
    if (!reports.ok()) return reports.status();
    // Rank 0 ends the group when any rank failed; the Start is done either way.
    return Status::Ok();
  }

  Status Load(const std::string& payload, LoadReport* rep) {
    STET_ASSIGN_OR_RETURN(GroupConfig c, DecodeConfig(payload));
    if (!model_ || c.model_path != path_) {
      model_.reset();
      STET_ASSIGN_OR_RETURN(model_, Model::LoadShard(c.model_path, comm_.rank(), comm_.size()));
      STET_ASSIGN_OR_RETURN(sha256_, Sha256File(c.model_path));
      path_ = c.model_path;
    }
    rep->sha256 = sha256_;
    pool_ = std::make_unique<ThreadPool>(c.n_threads);
    const Isa isa = WorkerIsa(c.isa);
    // Isa::kAuto: this shard's MatMul rows chosen by measurement, as the engine does on rank 0
    // (never a bit of output: every row equals the scalar one).
    if (isa == Isa::kAuto && model_->kernel_plan() == nullptr) model_->TuneKernels(c.n_threads);
    forward_ = std::make_unique<Forward>(*model_, pool_.get(), isa, c.max_ctx, c.numerics, &comm_);
    max_ctx_ = c.max_ctx;
    kv_.reset();
    return Status::Ok();
  }

  Status Step(const std::string& payload) {
    if (!forward_) {
      return Internal("tensor parallelism: a step before the group started (rank " +
                      std::to_string(comm_.rank()) + ")");
    }
    STET_ASSIGN_OR_RETURN(StepDesc s, DecodeStep(payload));
    if (!kv_ || kv_->n_blocks() != s.n_blocks || kv_->block_size() != s.block_size ||
        kv_->n_slots() != s.n_slots || kv_->type() != s.kv_type) {
      kv_.reset();
      kv_ = std::make_unique<PagedKvCache>(*model_, s.n_blocks, s.block_size, s.n_slots, s.kv_type);
    }
    for (auto& [slot, blocks] : s.tables) kv_->SetBlockTable(slot, std::move(blocks));
    for (const BatchToken& t : s.batch) {  // what Forward::Run asserts, checked here
      if (t.token < 0 || t.token >= model_->hparams().n_vocab || !kv_->Has(t.seq, t.pos) ||
          t.pos >= max_ctx()) {
        return DataLoss("tensor parallelism: a step from rank 0 names a token or position " +
                        std::string("this rank cannot hold (are all ranks the same build?)"));
      }
    }
    std::vector<float> none;
    return forward_->Run(s.batch, *kv_, &none);
  }

  int max_ctx() const { return max_ctx_; }

  TpComm& comm_;
  std::unique_ptr<Model> model_;
  std::string path_, sha256_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Forward> forward_;
  std::unique_ptr<PagedKvCache> kv_;
  int max_ctx_ = 0;
};

}  // namespace

Isa WorkerIsa(Isa wanted) {
  switch (wanted) {
    case Isa::kScalar:
    case Isa::kAuto:  // the best rows this CPU has, as on rank 0
      return wanted;
    case Isa::kAvx2:
      return CpuHasAvx2Fma() ? wanted : DefaultIsa();
    case Isa::kAvx512:
      return CpuHasAvx512() ? wanted : DefaultIsa();
    case Isa::kNeon:
      return CpuHasNeon() ? wanted : DefaultIsa();
  }
  return DefaultIsa();
}

Status RunWorker(TpComm& comm) { return Worker(comm).Run(); }

}  // namespace stet::dist
