#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <list>
#include <random>
#include <unordered_set>

#include "base/hash.h"
#include "engine/block_manager.h"
#include "engine/sequence.h"
#include "model/forward.h"
#include "model/paged_kv.h"
#include "tokenizer/vocab.h"

namespace stet {

using engine_internal::RequestState;
using engine_internal::Sequence;

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
    case FinishReason::kNone: break;
  }
  return "none";
}

struct Engine::Impl {
  Impl(const Model& model, const EngineOptions& o, int n_ctx, int n_blocks)
      : pool(std::max(1, o.n_threads)),
        fwd(model, &pool, o.isa, n_ctx, o.numerics),
        kv(model.hparams(), n_blocks, o.block_size, o.max_seqs, o.kv_type),
        blocks(n_blocks, o.block_size) {
    for (int s = o.max_seqs - 1; s >= 0; --s) free_slots.push_back(s);
  }

  // Shared with callers (under mu).
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::deque<std::shared_ptr<RequestState>> incoming;
  std::vector<uint64_t> cancels;
  EngineStats stats;
  uint64_t next_id = 1;

  // Engine thread only.
  ThreadPool pool;
  Forward fwd;
  PagedKvCache kv;
  BlockManager blocks;
  Sampler sampler;
  std::list<std::unique_ptr<Sequence>> all;  // owns every live sequence
  std::deque<Sequence*> waiting;             // FCFS by arrival
  std::vector<Sequence*> running;            // in admission order
  std::vector<int> free_slots;
  std::vector<float> logits, work;
  int64_t preemptions = 0, prompt_tokens = 0, generated_tokens = 0, steps = 0, finished = 0;
};

namespace {

uint64_t RandomSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

Status Validate(const RequestParams& p, int n_vocab, int n_ctx) {
  if (p.prompt.empty()) return InvalidArgument("the prompt has no tokens");
  for (int32_t id : p.prompt) {
    if (id < 0 || id >= n_vocab)
      return InvalidArgument("prompt token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                             std::to_string(n_vocab) + ")");
  }
  if (static_cast<int64_t>(p.prompt.size()) >= n_ctx) {
    return ResourceExhausted("the prompt has " + std::to_string(p.prompt.size()) +
                             " tokens; this engine's context holds " + std::to_string(n_ctx) +
                             " (prompt + at least one generated token)");
  }
  if (p.n < 1 || p.n > 128) return InvalidArgument("n must be in [1, 128]");
  if (p.max_tokens < 0) return InvalidArgument("max_tokens must be >= 0");
  if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature))
    return InvalidArgument("temperature must be a finite number >= 0");
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) return InvalidArgument("top_p must be in (0, 1]");
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) return InvalidArgument("min_p must be in [0, 1]");
  if (!(p.repetition_penalty > 0.0f) || !std::isfinite(p.repetition_penalty))
    return InvalidArgument("repetition_penalty must be > 0");
  if (!std::isfinite(p.presence_penalty) || std::fabs(p.presence_penalty) > 2.0f ||
      !std::isfinite(p.frequency_penalty) || std::fabs(p.frequency_penalty) > 2.0f)
    return InvalidArgument("presence_penalty and frequency_penalty must be in [-2, 2]");
  if (p.top_logprobs < 0 || p.top_logprobs > 20) return InvalidArgument("top_logprobs must be in [0, 20]");
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0 || id >= n_vocab) return InvalidArgument("logit_bias token id " + std::to_string(id) + " is outside the vocabulary");
    if (!std::isfinite(bias) || std::fabs(bias) > 100.0f) return InvalidArgument("logit_bias values must be in [-100, 100]");
  }
  for (int32_t id : p.stop_ids) {
    if (id < 0 || id >= n_vocab) return InvalidArgument("stop token id " + std::to_string(id) + " is outside the vocabulary");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::Create(std::unique_ptr<Model> model,
                                               std::unique_ptr<Tokenizer> tokenizer,
                                               const EngineOptions& opts) {
  if (opts.block_size < 1 || opts.max_seqs < 1 || opts.max_batch_tokens < 1 || opts.chunk_size < 1)
    return InvalidArgument("block_size, max_seqs, max_batch_tokens and chunk_size must be >= 1");
  if (opts.kv_type != DType::kF16 && opts.kv_type != DType::kF32)
    return InvalidArgument("the KV cache stores f16 or f32");
  std::unique_ptr<Engine> e(new Engine());
  e->opts_ = opts;
  e->n_ctx_ = std::max(2, std::min(opts.n_ctx, model->hparams().n_ctx_train));
  const int per_seq = (e->n_ctx_ + opts.block_size - 1) / opts.block_size;
  int n_blocks = opts.n_kv_blocks;
  if (n_blocks <= 0) {  // 16k positions; one sequence never needs more than its context
    n_blocks = opts.max_seqs == 1 ? per_seq + 1
                                  : std::max(per_seq + 1, (16384 + opts.block_size - 1) / opts.block_size);
  }
  if (n_blocks < per_seq) {
    return InvalidArgument("the KV cache (" + std::to_string(n_blocks) + " blocks of " +
                           std::to_string(opts.block_size) + ") cannot hold one sequence of the context (" +
                           std::to_string(e->n_ctx_) + " positions)");
  }
  STET_ASSIGN_OR_RETURN(e->model_sha256_, Sha256File(model->file().path()));
  FingerprintInputs fi{e->model_sha256_, opts.kv_type, opts.numerics};
  e->fingerprint_ = Fingerprint(fi);
  e->fingerprint_descriptor_ = FingerprintDescriptor(fi);
  e->model_ = std::move(model);
  e->tokenizer_ = std::move(tokenizer);
  e->impl_ = std::make_unique<Impl>(*e->model_, opts, e->n_ctx_, n_blocks);
  e->impl_->stats.kv_blocks_total = n_blocks;
  e->thread_ = std::thread([eng = e.get()] { eng->Loop(); });
  return e;
}

Result<LoadedModel> LoadModelAndTokenizer(const std::string& path, bool progress) {
  LoadedModel out;
  STET_ASSIGN_OR_RETURN(out.model, Model::Load(path, progress));
  STET_ASSIGN_OR_RETURN(VocabData vocab, VocabFromGguf(out.model->file()));
  STET_ASSIGN_OR_RETURN(out.tokenizer, Tokenizer::Create(std::move(vocab)));
  if (out.tokenizer->n_vocab() != out.model->hparams().n_vocab) {
    return DataLoss("the tokenizer has " + std::to_string(out.tokenizer->n_vocab()) +
                    " tokens but the embedding has " +
                    std::to_string(out.model->hparams().n_vocab) + " rows");
  }
  return out;
}

Result<std::unique_ptr<Engine>> Engine::Open(const std::string& path, const EngineOptions& opts,
                                             bool progress) {
  STET_ASSIGN_OR_RETURN(LoadedModel loaded, LoadModelAndTokenizer(path, progress));
  return Create(std::move(loaded.model), std::move(loaded.tokenizer), opts);
}

Engine::~Engine() {
  if (!impl_) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<Engine::Submitted> Engine::Submit(RequestParams params, Callback on_event) {
  STET_RETURN_IF_ERROR(Validate(params, model_->hparams().n_vocab, n_ctx_));
  auto r = std::make_shared<RequestState>();
  r->seed = params.seed ? *params.seed : RandomSeed();
  r->params = std::move(params);
  r->callback = std::move(on_event);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stop) return Cancelled("the engine is shutting down");
    r->id = impl_->next_id++;
    r->arrival = r->id;
    impl_->incoming.push_back(r);
  }
  impl_->cv.notify_all();
  return Submitted{r->id, r->seed};
}

void Engine::Cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->cancels.push_back(id);
  }
  impl_->cv.notify_all();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

Result<Engine::Completion> Engine::Generate(RequestParams params) {
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    int open = 0;
    Completion c;
  };
  auto w = std::make_shared<Waiter>();
  const int n = params.n;
  w->open = n;
  w->c.tokens.resize(n);
  w->c.text.resize(n);
  w->c.finish.resize(n, FinishReason::kNone);
  auto sub = Submit(std::move(params), [w](const RequestEvent& ev) {
    std::lock_guard<std::mutex> lock(w->mu);
    switch (ev.kind) {
      case RequestEvent::Kind::kPromptScored:
        w->c.prompt_tokens = ev.prompt_tokens;
        break;
      case RequestEvent::Kind::kToken:
        w->c.tokens[ev.choice].push_back(ev.token);
        w->c.text[ev.choice] += ev.text_delta;
        break;
      case RequestEvent::Kind::kFinished:
        w->c.text[ev.choice] += ev.text_delta;
        w->c.finish[ev.choice] = ev.finish;
        w->c.cached_prompt_tokens = std::max(w->c.cached_prompt_tokens, ev.cached_prompt_tokens);
        if (--w->open == 0) w->cv.notify_all();
        break;
    }
  });
  if (!sub.ok()) return sub.status();
  std::unique_lock<std::mutex> lock(w->mu);
  w->cv.wait(lock, [&] { return w->open == 0; });
  w->c.seed = sub->seed;
  return w->c;
}

// ---------------------------------------------------------------------------
// The engine thread.

namespace {

struct Plan {
  Sequence* seq;
  int start;    // first position fed this step
  int count;    // positions fed
  bool sample;  // the last fed position's logits pick the next token
  size_t logits_row = 0;
};

}  // namespace

void Engine::Loop() {
  Impl& I = *impl_;
  const int B = opts_.block_size;
  const int n_vocab = model_->hparams().n_vocab;

  auto emit = [](Sequence* s, const RequestEvent& ev) {
    if (s->req->callback) s->req->callback(ev);
  };

  auto release_kv = [&](Sequence* s) {
    for (int32_t b : s->blocks) I.blocks.Release(b);
    s->blocks.clear();
    s->hashes.clear();
    s->n_computed = 0;
    if (s->slot >= 0) {
      I.kv.SetBlockTable(s->slot, {});
      I.free_slots.push_back(s->slot);
      s->slot = -1;
    }
  };

  auto finish = [&](Sequence* s, FinishReason why, const std::string& error = "") {
    if (s->finished) return;
    s->finished = true;
    RequestEvent ev;
    ev.kind = RequestEvent::Kind::kFinished;
    ev.choice = s->choice;
    ev.finish = why;
    ev.error = error;
    if (why == FinishReason::kLength && s->text) ev.text_delta = s->text->Finish();
    ev.prompt_tokens_count = s->n_prompt;
    ev.completion_tokens = s->n_generated;
    ev.cached_prompt_tokens = s->cached_prompt_tokens;
    release_kv(s);
    ++I.finished;
    emit(s, ev);
  };

  // Blocks a sequence still needs so positions [0, upto) have storage.
  auto blocks_needed = [&](const Sequence* s, int upto) {
    const int want = (upto + B - 1) / B;
    return std::max(0, want - static_cast<int>(s->blocks.size()));
  };
  auto grow = [&](Sequence* s, int upto) {
    for (int n = blocks_needed(s, upto); n > 0; --n) {
      auto b = I.blocks.Allocate();
      STET_CHECK(b.has_value());
      s->blocks.push_back(*b);
    }
    I.kv.SetBlockTable(s->slot, s->blocks);
  };

  auto preempt = [&](Sequence* s) {
    // Recompute later: invariance makes the recomputed KV and logits identical.
    release_kv(s);
    I.running.erase(std::find(I.running.begin(), I.running.end(), s));
    auto pos = std::find_if(I.waiting.begin(), I.waiting.end(),
                            [&](Sequence* w) { return w->arrival() > s->arrival(); });
    I.waiting.insert(pos, s);
    ++I.preemptions;
  };

  // Called with I.mu held.
  auto publish_stats = [&] {
    EngineStats& st = I.stats;
    st.waiting = static_cast<int>(I.waiting.size() + I.incoming.size());
    st.running = static_cast<int>(I.running.size());
    st.kv_blocks_used = I.blocks.used();
    st.prefix_lookup_tokens = I.blocks.lookup_tokens();
    st.prefix_hit_tokens = I.blocks.hit_tokens();
    st.prompt_tokens = I.prompt_tokens;
    st.generated_tokens = I.generated_tokens;
    st.steps = I.steps;
    st.preemptions = I.preemptions;
    st.requests_finished = I.finished;
  };

  std::vector<BatchToken> batch;
  std::vector<Plan> plans;
  for (;;) {
    std::vector<uint64_t> cancels;
    {
      std::unique_lock<std::mutex> lock(I.mu);
      publish_stats();
      I.cv.wait(lock, [&] {
        return I.stop || !I.incoming.empty() || !I.cancels.empty() || !I.running.empty() ||
               !I.waiting.empty();
      });
      if (I.stop) break;
      while (!I.incoming.empty()) {
        auto r = I.incoming.front();
        I.incoming.pop_front();
        for (int c = 0; c < r->params.n; ++c) {
          auto s = std::make_unique<Sequence>();
          s->req = r;
          s->choice = c;
          s->tokens = r->params.prompt;
          s->n_prompt = static_cast<int>(s->tokens.size());
          s->max_new = std::min(r->params.max_tokens, n_ctx_ - s->n_prompt);
          s->text = std::make_unique<TextStream>(*tokenizer_, r->params.stop);
          I.waiting.push_back(s.get());
          I.all.push_back(std::move(s));
        }
      }
      cancels.swap(I.cancels);
    }
    // Cancellations, and requests with nothing to generate.
    for (auto& sp : I.all) {
      Sequence* s = sp.get();
      if (s->finished) continue;
      const bool cancelled = std::find(cancels.begin(), cancels.end(), s->req->id) != cancels.end();
      if (cancelled) s->req->cancelled = true;
      if (s->req->cancelled) {
        auto it = std::find(I.running.begin(), I.running.end(), s);
        if (it != I.running.end()) I.running.erase(it);
        auto wt = std::find(I.waiting.begin(), I.waiting.end(), s);
        if (wt != I.waiting.end()) I.waiting.erase(wt);
        finish(s, FinishReason::kCancelled);
      }
    }

    // ---- Plan the step: decode first, then running prefills, then admissions (FCFS).
    plans.clear();
    int budget = opts_.max_batch_tokens;
    // Decode sequences that need a new block get it, preempting the youngest if needed.
    for (;;) {
      int need = 0;
      for (Sequence* s : I.running)
        if (static_cast<int>(s->tokens.size()) - s->n_computed == 1) need += blocks_needed(s, s->n_computed + 1);
      if (need <= I.blocks.available() || I.running.size() <= 1) break;
      preempt(I.running.back());
    }
    for (Sequence* s : I.running) {
      if (budget == 0) break;
      if (static_cast<int>(s->tokens.size()) - s->n_computed != 1) continue;
      if (blocks_needed(s, s->n_computed + 1) > I.blocks.available()) continue;
      grow(s, s->n_computed + 1);
      plans.push_back({s, s->n_computed, 1, true});
      --budget;
    }
    auto plan_prefill = [&](Sequence* s) -> bool {
      const int remaining = static_cast<int>(s->tokens.size()) - s->n_computed;
      int chunk = std::min({remaining, opts_.chunk_size, budget});
      // Shrink to what the free blocks can hold.
      const int capacity = (static_cast<int>(s->blocks.size()) + I.blocks.available()) * B - s->n_computed;
      chunk = std::min(chunk, capacity);
      if (chunk <= 0) return false;
      grow(s, s->n_computed + chunk);
      plans.push_back({s, s->n_computed, chunk, s->n_computed + chunk == static_cast<int>(s->tokens.size())});
      budget -= chunk;
      return true;
    };
    for (Sequence* s : I.running) {
      if (budget == 0) break;
      if (static_cast<int>(s->tokens.size()) - s->n_computed > 1) plan_prefill(s);
    }
    while (budget > 0 && !I.waiting.empty() && !I.free_slots.empty()) {
      Sequence* s = I.waiting.front();
      const RequestParams& p = s->req->params;
      if (opts_.prefix_cache && !p.prompt_logprobs) {
        const int max_blocks = (static_cast<int>(s->tokens.size()) - 1) / B;
        s->blocks = I.blocks.AcquirePrefix(s->tokens, max_blocks, &s->hashes);
        s->n_computed = static_cast<int>(s->blocks.size()) * B;
      }
      if (!s->admitted_once) s->cached_prompt_tokens = std::min(s->n_computed, s->n_prompt);
      s->slot = I.free_slots.back();
      I.free_slots.pop_back();
      I.kv.SetBlockTable(s->slot, s->blocks);
      if (!plan_prefill(s)) {  // no room: give the blocks back, keep FCFS order
        release_kv(s);
        break;
      }
      s->admitted_once = true;
      I.waiting.pop_front();
      I.running.push_back(s);
    }
    if (plans.empty()) {
      if (I.running.size() > 1) {
        preempt(I.running.back());  // free blocks for the older sequences
      } else if (I.running.empty() && !I.waiting.empty() && I.free_slots.empty()) {
        STET_CHECK_MSG(false, "engine: waiting sequences but no free slot and nothing running");
      }
      // Garbage-collect finished sequences and go again.
      I.all.remove_if([](const std::unique_ptr<Sequence>& s) { return s->finished; });
      continue;
    }

    // ---- Run the batch.
    batch.clear();
    for (Plan& pl : plans) {
      const bool all_logits = pl.seq->req->params.prompt_logprobs && !pl.seq->prompt_scored;
      for (int i = 0; i < pl.count; ++i) {
        const int pos = pl.start + i;
        const bool last = i + 1 == pl.count;
        batch.push_back({pl.seq->tokens[pos], pos, pl.seq->slot, (last && pl.sample) || all_logits});
      }
    }
    I.logits.clear();
    Status st = I.fwd.Run(batch, I.kv, &I.logits);
    ++I.steps;
    if (!st.ok()) {
      for (Plan& pl : plans) {
        I.running.erase(std::find(I.running.begin(), I.running.end(), pl.seq));
        finish(pl.seq, FinishReason::kError, st.ToString());
      }
      continue;
    }

    // ---- Consume the logits, in batch order.
    size_t row = 0;
    for (Plan& pl : plans) {
      Sequence* s = pl.seq;
      const RequestParams& p = s->req->params;
      const bool all_logits = p.prompt_logprobs && !s->prompt_scored;
      if (all_logits) {
        for (int i = 0; i < pl.count; ++i) {
          const int pos = pl.start + i;
          const float* lr = &I.logits[(row + i) * n_vocab];
          if (pos + 1 < s->n_prompt) {
            TokenOut t;
            t.id = s->tokens[pos + 1];
            t.logprob = LogSoftmaxAt(lr, n_vocab, t.id);
            if (p.top_logprobs > 0) t.top = TopLogprobs(lr, n_vocab, p.top_logprobs);
            t.text = tokenizer_->TokenToPiece(t.id);
            s->prompt_scores.push_back(std::move(t));
          }
        }
        pl.logits_row = row + pl.count - 1;
        row += pl.count;
      } else if (pl.sample) {
        pl.logits_row = row++;
      }
      s->n_computed = pl.start + pl.count;
      if (s->n_computed >= s->n_prompt) I.prompt_tokens += 0;  // counted below
      // Publish newly completed full blocks to the prefix cache.
      if (opts_.prefix_cache) {
        while (static_cast<int>(s->hashes.size()) < s->n_computed / B) {
          const size_t j = s->hashes.size();
          const uint64_t parent = j == 0 ? 0 : s->hashes[j - 1];
          const uint64_t h = BlockManager::ChainHash(parent, &s->tokens[j * B], B);
          I.blocks.Register(s->blocks[j], h, &s->tokens[j * B]);
          s->hashes.push_back(h);
        }
      }
      if (p.prompt_logprobs && !s->prompt_scored && s->n_computed >= s->n_prompt) {
        s->prompt_scored = true;
        RequestEvent ev;
        ev.kind = RequestEvent::Kind::kPromptScored;
        ev.choice = s->choice;
        TokenOut first;
        first.id = s->tokens[0];
        first.text = tokenizer_->TokenToPiece(first.id);
        ev.prompt_tokens.push_back(first);
        for (auto& t : s->prompt_scores) ev.prompt_tokens.push_back(std::move(t));
        s->prompt_scores.clear();
        emit(s, ev);
      }
    }
    I.prompt_tokens += static_cast<int64_t>(batch.size());

    for (Plan& pl : plans) {
      Sequence* s = pl.seq;
      if (!pl.sample || s->finished) continue;
      const RequestParams& p = s->req->params;
      auto drop = [&](Sequence* x) { I.running.erase(std::find(I.running.begin(), I.running.end(), x)); };
      if (s->n_generated >= s->max_new) {  // max_tokens 0 (scoring) or the context is full
        drop(s);
        finish(s, FinishReason::kLength);
        continue;
      }
      const float* raw = &I.logits[pl.logits_row * n_vocab];
      // Penalties and biases act on a copy; reported logprobs use the raw logits.
      I.work.assign(raw, raw + n_vocab);
      for (const auto& [id, bias] : p.logit_bias) I.work[id] += bias;
      if (p.repetition_penalty != 1.0f) {
        std::unordered_set<int32_t> seen(s->tokens.begin(), s->tokens.end());
        for (int32_t id : seen) {
          float& l = I.work[id];
          l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
        }
      }
      if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
        for (const auto& [id, count] : s->out_counts) {
          I.work[id] -= p.presence_penalty + p.frequency_penalty * static_cast<float>(count);
        }
      }
      SamplingParams sp;
      sp.temperature = p.temperature;
      sp.top_k = p.top_k;
      sp.top_p = p.top_p;
      sp.min_p = p.min_p;
      sp.seed = s->req->seed;
      const int pos = static_cast<int>(s->tokens.size());
      const int32_t id = I.sampler.Sample(I.work.data(), n_vocab, sp, static_cast<uint32_t>(s->choice), pos);
      TokenOut t;
      t.id = id;
      t.logprob = LogSoftmaxAt(raw, n_vocab, id);
      if (p.top_logprobs > 0) t.top = TopLogprobs(raw, n_vocab, p.top_logprobs);
      if (p.logits_hash) t.logits_hash = Fnv1a64(raw, sizeof(float) * n_vocab);
      if (p.return_logits) t.logits.assign(raw, raw + n_vocab);
      t.text = tokenizer_->TokenToPiece(id);
      s->tokens.push_back(id);
      ++s->n_generated;
      ++I.generated_tokens;
      ++s->out_counts[id];
      const bool is_stop_id = std::find(p.stop_ids.begin(), p.stop_ids.end(), id) != p.stop_ids.end();
      if ((!p.ignore_eos && tokenizer_->IsEog(id)) || is_stop_id) {
        drop(s);
        RequestEvent ev;
        ev.kind = RequestEvent::Kind::kToken;
        ev.choice = s->choice;
        ev.token = std::move(t);
        emit(s, ev);  // the end marker, with its logprob; it adds no text
        finish(s, FinishReason::kStop);
        continue;
      }
      bool stopped = false;
      RequestEvent ev;
      ev.kind = RequestEvent::Kind::kToken;
      ev.choice = s->choice;
      ev.text_delta = s->text->Push(id, &stopped);
      ev.token = std::move(t);
      emit(s, ev);
      if (stopped) {
        drop(s);
        finish(s, FinishReason::kStop);
      } else if (s->n_generated >= s->max_new) {
        drop(s);
        finish(s, FinishReason::kLength);
      }
    }
    I.all.remove_if([](const std::unique_ptr<Sequence>& s) { return s->finished; });

  }
  // Shutdown: everything still in flight ends as cancelled.
  for (auto& sp : I.all) finish(sp.get(), FinishReason::kCancelled);
}

}  // namespace stet
