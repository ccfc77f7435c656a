#include "engine/session.h"

#include <algorithm>
#include <chrono>

namespace stet {

namespace {
double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Session::Session(const Model& model, const SessionOptions& opts) : model_(model), opts_(opts) {
  n_ctx_ = std::max(1, std::min(opts.n_ctx, model.hparams().n_ctx_train));
  pool_ = std::make_unique<ThreadPool>(std::max(1, opts.n_threads));
  forward_ = std::make_unique<Forward>(model, pool_.get(), opts.isa, n_ctx_);
  kv_ = std::make_unique<KvCache>(model.hparams(), 1, n_ctx_, opts.kv_type);
}

Status Session::Generate(const std::vector<int32_t>& prompt, int max_tokens,
                         const SamplingParams& params, const std::function<bool(int32_t)>& is_stop,
                         const std::function<bool(int32_t, float)>& on_token,
                         GenerateStats* stats) {
  const int n_vocab = model_.hparams().n_vocab;
  if (prompt.empty()) return InvalidArgument("the prompt has no tokens");
  if (static_cast<int>(prompt.size()) >= n_ctx_) {
    return ResourceExhausted("the prompt has " + std::to_string(prompt.size()) +
                             " tokens; the context holds " + std::to_string(n_ctx_) +
                             " (leave room for at least one generated token)");
  }
  GenerateStats local;
  local.prompt_tokens = static_cast<int>(prompt.size());
  const double t0 = Now();
  std::vector<BatchToken> batch;
  const int chunk = std::max(1, opts_.chunk_size);
  for (size_t start = 0; start < prompt.size(); start += chunk) {
    const size_t end = std::min(prompt.size(), start + chunk);
    batch.clear();
    for (size_t i = start; i < end; ++i) {
      batch.push_back({prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size()});
    }
    logits_.clear();
    STET_RETURN_IF_ERROR(forward_->Run(batch, *kv_, &logits_));
  }
  const double t1 = Now();
  local.prefill_seconds = t1 - t0;

  int pos = static_cast<int>(prompt.size());
  for (int step = 0; step < max_tokens; ++step) {
    const int32_t id = sampler_.Sample(logits_.data(), n_vocab, params, 0, pos);
    const float lp = LogSoftmaxAt(logits_.data(), n_vocab, id);
    ++local.generated_tokens;
    const bool go_on = on_token(id, lp);
    if (!go_on || is_stop(id) || step + 1 == max_tokens) break;
    if (pos >= n_ctx_) break;  // the context is full: stop as if max_tokens were reached
    batch.assign(1, BatchToken{id, pos, 0, true});
    logits_.clear();
    STET_RETURN_IF_ERROR(forward_->Run(batch, *kv_, &logits_));
    ++pos;
  }
  local.decode_seconds = Now() - t1;
  if (stats) *stats = local;
  return Status::Ok();
}

}  // namespace stet
