// The serving engine: many requests in flight, joining and leaving between
// steps (continuous batching), chunked prefill under a per-step token budget,
// a paged KV cache with a prefix cache, and preemption by recompute when KV
// blocks run out. Every output is bitwise identical to the same request run
// alone (tests/engine/invariance_test.cc), because every kernel is
// batch-invariant and sampling is keyed by (seed, choice, position) — which is
// also why speculative decoding (EngineOptions::spec) cannot change a bit.
//
// Thread-safe: Submit and Cancel may be called from any thread; events are
// delivered on the engine's own thread, in order per choice.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/fingerprint.h"
#include "engine/request.h"
#include "engine/speculative.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace stet {

struct EngineOptions {
  int n_ctx = 4096;             // positions per sequence (clamped to the model's training length)
  DType kv_type = DType::kF16;  // KV storage; part of the fingerprint
  int n_threads = 1;            // never changes results (R2)
  Isa isa = Isa::kScalar;       // never changes results (R4)
  NumericsMode numerics = NumericsMode::kInvariant;
  int block_size = 16;  // KV positions per block
  int n_kv_blocks = 0;  // 0: 16k positions and at least one context (max_seqs 1: one context)
  int max_seqs = 64;    // sequences in flight (KV slots)
  int max_batch_tokens = 512;  // tokens per forward step (decode first, then prefill chunks)
  int chunk_size = 256;        // prefill tokens per sequence per step; never changes results
  bool prefix_cache = true;
  // Speculative decoding (engine/speculative.h): the default for requests that
  // do not set RequestParams::speculative. Never changes results, so it is not
  // in the fingerprint.
  SpecOptions spec;
  // Tensor parallelism (src/dist): this process is rank 0 of the group `tp`
  // (size > 1; every other rank runs dist::RunWorker) and the model is rank
  // 0's shard (LoadModelAndTokenizer with the same comm, as Open does). Each
  // step goes to the workers before rank 0's forward pass; a rank that stops
  // answering fails what is in flight and the engine (health()). Never changes
  // a bit, so it is not in the fingerprint.
  TpComm* tp = nullptr;
};

struct EngineStats {
  int waiting = 0;  // sequences queued (not yet or no longer holding KV)
  int running = 0;  // sequences holding KV
  int kv_blocks_used = 0;
  int kv_blocks_total = 0;
  int64_t prefix_lookup_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t prompt_tokens = 0;  // computed prompt positions (cache hits excluded)
  int64_t generated_tokens = 0;
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t requests_finished = 0;
  int64_t spec_draft_tokens = 0;     // draft tokens verified (fed to the model)
  int64_t spec_accepted_tokens = 0;  // of those, equal to the sampled token
  int max_waiting = 0;               // high-water marks since start, taken every step
  int max_running = 0;
};

// A GGUF file's model and the tokenizer its metadata describes, checked to
// agree (the embedding has a row per vocabulary entry).
struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};
// With `tp` (size > 1): this rank's shard of the model (Model::LoadShard).
Result<LoadedModel> LoadModelAndTokenizer(const std::string& path, bool progress = false,
                                          TpComm* tp = nullptr);

class Engine {
 public:
  using Callback = std::function<void(const RequestEvent&)>;

  // Takes ownership of the model and tokenizer; computes the model's SHA-256
  // for the fingerprint; starts the engine thread.
  static Result<std::unique_ptr<Engine>> Create(std::unique_ptr<Model> model,
                                                std::unique_ptr<Tokenizer> tokenizer,
                                                const EngineOptions& opts);
  // The one way tools and tests start an engine on a GGUF file: the model, its
  // vocabulary and tokenizer (LoadModelAndTokenizer's checks), then Create.
  static Result<std::unique_ptr<Engine>> Open(const std::string& path, const EngineOptions& opts,
                                              bool progress = false);
  ~Engine();  // cancels what is in flight (events: kFinished/kCancelled) and joins

  struct Submitted {
    uint64_t id;
    uint64_t seed;  // the seed in use (generated when the request had none)
  };
  // Validates (ValidateRequest against limits()), picks a seed when the request
  // has none (NewSeed) and enqueues. Errors (no event is sent then):
  // InvalidArgument for malformed parameters or out-of-vocabulary ids;
  // ResourceExhausted for a prompt that cannot fit the context.
  Result<Submitted> Submit(RequestParams params, Callback on_event);
  // Stops a request at the next step and frees its KV; its choices finish with kCancelled.
  void Cancel(uint64_t id);

  // Runs a request to completion on the calling thread's behalf (blocks).
  struct Completion {
    uint64_t seed = 0;
    std::vector<std::vector<TokenOut>> tokens;  // per choice
    std::vector<std::string> text;              // per choice
    std::vector<FinishReason> finish;           // per choice
    std::vector<TokenOut> prompt_tokens;        // with prompt_logprobs
    int cached_prompt_tokens = 0;
  };
  Result<Completion> Generate(RequestParams params);

  // Replaces float weights in place (Model::ReplaceTensors: f32/f16/bf16
  // tensors by their GGUF names, all or none) at a step boundary: requests
  // submitted before the call finish with the weights they started with,
  // those submitted after it run with the new ones. Blocks until done. The
  // fingerprint then names the current weights (Model::WeightsDigest; equal
  // to the file's again when they are), and nothing the old weights left in
  // the prefix cache is hit again. Errors (nothing changed): ReplaceTensors'.
  Status LoadWeights(const std::vector<TensorValues>& values);

  EngineStats stats() const;
  // Ok, or why the engine can no longer answer: its tensor-parallel group
  // broke (a rank died or stopped answering). Every request then fails with
  // that message; a server reports it on /health and exits.
  Status health() const;
  // The ranks this engine's model is split across (1: one process).
  int tp_ranks() const { return model_->shard().n_ranks; }
  // Copies: LoadWeights may change them while another thread reads.
  std::string fingerprint() const;
  std::string fingerprint_descriptor() const;
  const std::string& model_sha256() const { return model_sha256_; }  // the file's
  const Model& model() const { return *model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  int n_ctx() const { return n_ctx_; }
  // What Submit checks requests against (ValidateRequest).
  RequestLimits limits() const {
    return {model_->hparams().n_vocab, n_ctx_, [this] { return &vocab_trie(); }};
  }
  // The vocabulary's token bytes as a trie (constrained decoding's masks),
  // built on first use; thread-safe.
  const TokenTrie& vocab_trie() const;

 private:
  struct Impl;
  Engine() = default;
  void Loop();

  void SetFingerprint();  // from the options and the model's current weights

  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  int n_ctx_ = 0;
  DType kv_type_ = DType::kF16;
  NumericsMode numerics_ = NumericsMode::kInvariant;
  std::string model_sha256_;
  mutable std::mutex fp_mu_;  // guards the two below
  std::string fingerprint_, fingerprint_descriptor_;
  std::mutex load_mu_;          // one LoadWeights at a time
  std::unique_ptr<Impl> impl_;  // the engine thread and everything it owns
};

}  // namespace stet
