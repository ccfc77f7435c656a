// A single sequence generated to completion: the engine behind `stet run`.
// Prefill runs in chunks of `chunk_size` tokens; chunking never changes the
// logits (batch-invariant kernels, R1–R3), only the speed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/cpu_features.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "engine/sampler.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace stet {

struct SessionOptions {
  int n_ctx = 4096;             // positions available (clamped to the model's training context)
  DType kv_type = DType::kF16;  // KV cache storage
  int n_threads = 1;
  Isa isa = Isa::kScalar;
  int chunk_size = 256;         // prefill tokens per forward call
};

struct GenerateStats {
  int prompt_tokens = 0;
  int generated_tokens = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;
};

class Session {
 public:
  Session(const Model& model, const SessionOptions& opts);

  // Runs prompt then up to max_tokens sampled tokens. After each token,
  // on_token(id, logprob) is called (logprob: log-softmax of the raw logits);
  // returning false stops. Generation also stops after a token for which
  // is_stop(id) is true (it is still reported). Errors: an empty prompt, or a
  // prompt that does not fit the context (InvalidArgument / ResourceExhausted).
  Status Generate(const std::vector<int32_t>& prompt, int max_tokens, const SamplingParams& params,
                  const std::function<bool(int32_t)>& is_stop,
                  const std::function<bool(int32_t, float)>& on_token, GenerateStats* stats);

  // The logits of the last step (n_vocab floats).
  const std::vector<float>& last_logits() const { return logits_; }
  int n_ctx() const { return n_ctx_; }

 private:
  const Model& model_;
  SessionOptions opts_;
  int n_ctx_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Forward> forward_;
  std::unique_ptr<KvCache> kv_;
  Sampler sampler_;
  std::vector<float> logits_;
};

}  // namespace stet
