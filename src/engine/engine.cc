#include "engine/engine.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <list>
#include <mutex>
#include <new>
#include <thread>

#include "base/hash.h"
#include "dist/leader.h"
#include "engine/draft_model.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "model/forward.h"
#include "model/paged_kv.h"
#include "tokenizer/vocab.h"

namespace stet {

using engine_internal::DraftModel;
using engine_internal::DraftWork;
using engine_internal::RequestState;
using engine_internal::Scheduler;
using engine_internal::Sequence;
using engine_internal::StepPlan;

// The engine thread's state and the steps of its loop (Engine::Loop): intake
// → cancel → plan (the Scheduler's policy) → run the batch → consume the
// logits (prompt scores, prefix-cache publish) → sample and emit → collect.
struct Engine::Impl {
  Impl(Engine& e, const EngineOptions& o, int n_ctx, int n_blocks,
       std::unique_ptr<dist::Leader> group)
      : engine(e),
        n_ctx(n_ctx),
        spec(o.spec),
        n_vocab(e.model().hparams().n_vocab),
        pool(std::max(1, o.n_threads)),
        leader(std::move(group)),
        fwd(e.model(), &pool, o.isa, n_ctx, o.numerics, leader ? &leader->comm() : nullptr),
        kv(e.model(), n_blocks, o.block_size, o.max_seqs, o.kv_type),
        sched({o.block_size, o.max_batch_tokens, o.chunk_size, o.prefix_cache}, n_blocks,
              o.max_seqs,
              [this](int slot, const std::vector<int32_t>& b) { kv.SetBlockTable(slot, b); }),
        sampler(o.isa) {}

  // Shared with callers (under mu).
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::deque<std::shared_ptr<RequestState>> incoming;
  std::vector<uint64_t> cancels;
  EngineStats stats;
  uint64_t next_id = 1;
  Status group_error;  // set once, when the tensor-parallel group breaks
  // LoadWeights' hand-over: the new values, applied once every request that
  // arrived before it (id < barrier) has finished; the caller waits for done.
  struct WeightsTask {
    const std::vector<TensorValues>* values = nullptr;
    uint64_t barrier = 0;
    bool done = false;
    Status status;
  };
  WeightsTask* weights_task = nullptr;
  // How many times the weights changed: mixed into every later request's
  // prefix-cache root, so no block the old weights computed is hit again.
  uint64_t weights_epoch = 0;

  // Engine thread only.
  Engine& engine;  // its model changes only in ApplyWeights, between steps
  const int n_ctx;
  const SpecOptions spec;
  const int n_vocab;
  ThreadPool pool;
  std::unique_ptr<dist::Leader> leader;  // tensor parallelism: the other ranks, or null
  bool broken = false;                   // the group failed (engine thread's copy)
  Forward fwd;
  PagedKvCache kv;
  Scheduler sched;
  std::unique_ptr<DraftModel> draft;  // the draft-model drafter, when SpecOptions::draft_model
  std::vector<DraftWork> draft_work;
  Sampler sampler;
  std::list<std::unique_ptr<Sequence>> all;  // owns every live sequence
  std::vector<StepPlan> plans;
  std::vector<BatchToken> batch;
  std::vector<float> logits;
  std::once_flag trie_once;
  std::unique_ptr<TokenTrie> trie;  // the vocabulary's token bytes (Engine::vocab_trie)
  std::vector<uint8_t> mask;        // the step's allowed tokens for one constrained choice
  int64_t prompt_tokens = 0, generated_tokens = 0, steps = 0, finished = 0;
  int64_t spec_drafted = 0, spec_accepted = 0;
  std::thread thread;  // runs Engine::Loop; joined by ~Engine

  bool Intake(std::vector<uint64_t>* cancels_out);
  bool BehindWeights(const RequestState& r) const {  // with mu held
    return weights_task != nullptr && r.id >= weights_task->barrier;
  }
  void ApplyWeights();  // with mu held
  void ApplyCancellations(const std::vector<uint64_t>& ids);
  void ProposeDrafts();
  void PrefillDrafts();
  bool RunBatch();
  void ConsumeLogits();
  void SampleAndEmit();
  void Collect() {
    all.remove_if([](const std::unique_ptr<Sequence>& s) { return s->finished; });
  }
  void Heartbeat();
  void FailGroup(const Status& st);
  void Finish(Sequence* s, FinishReason why, const std::string& error = "");
  void PublishStats();  // with mu held
  void ScorePrompt(StepPlan& pl, size_t row);
  void ReleaseParked(RequestState& r, const RequestEvent& scored);
  void SampleOne(Sequence* s, size_t row);
  const uint8_t* GrammarMask(Sequence* s);
  const uint8_t* MinTokensMask(Sequence* s, const uint8_t* allowed);
  void SampleSpeculative(const StepPlan& pl);
};

Result<std::unique_ptr<Engine>> Engine::Create(std::unique_ptr<Model> model,
                                               std::unique_ptr<Tokenizer> tokenizer,
                                               const EngineOptions& opts) {
  if (opts.block_size < 1 || opts.max_seqs < 1 || opts.max_batch_tokens < 1 || opts.chunk_size < 1)
    return InvalidArgument("block_size, max_seqs, max_batch_tokens and chunk_size must be >= 1");
  if (opts.kv_type != DType::kF16 && opts.kv_type != DType::kF32)
    return InvalidArgument("the KV cache stores f16 or f32");
  STET_RETURN_IF_ERROR(ValidateSpecOptions(opts.spec));
  std::unique_ptr<Engine> e(new Engine());
  e->n_ctx_ = std::max(2, std::min(opts.n_ctx, model->hparams().n_ctx_train));
  const int per_seq = (e->n_ctx_ + opts.block_size - 1) / opts.block_size;
  int n_blocks = opts.n_kv_blocks;
  if (n_blocks <= 0) {  // 16k positions; one sequence never needs more than its context
    n_blocks = opts.max_seqs == 1
                   ? per_seq + 1
                   : std::max(per_seq + 1, (16384 + opts.block_size - 1) / opts.block_size);
  }
  if (n_blocks < per_seq) {
    return InvalidArgument("the KV cache (" + std::to_string(n_blocks) + " blocks of " +
                           std::to_string(opts.block_size) +
                           ") cannot hold one sequence of the context (" +
                           std::to_string(e->n_ctx_) + " positions)");
  }
  std::unique_ptr<Model> draft;
  if (!opts.spec.draft_model.empty()) {
    STET_ASSIGN_OR_RETURN(LoadedModel d, LoadModelAndTokenizer(opts.spec.draft_model));
    STET_RETURN_IF_ERROR(CheckSameTokenizer(tokenizer->vocab(), model->file().path(),
                                            d.tokenizer->vocab(), opts.spec.draft_model));
    draft = std::move(d.model);
  }
  // Isa::kAuto: MatMul rows chosen by measurement on this model (never a bit of output).
  if (opts.isa == Isa::kAuto && model->kernel_plan() == nullptr) model->TuneKernels(opts.n_threads);
  // Tensor parallelism: the workers load their shards while rank 0 hashes its file.
  std::unique_ptr<dist::Leader> group;
  if (opts.tp != nullptr && opts.tp->size() > 1) {
    const Shard& sh = model->shard();
    if (sh.n_ranks != opts.tp->size() || sh.rank != opts.tp->rank() || sh.rank != 0) {
      return InvalidArgument(
          "tensor parallelism: the engine runs on rank 0 with rank 0's shard "
          "(LoadModelAndTokenizer with the group's comm)");
    }
    group = std::make_unique<dist::Leader>(*opts.tp);
    dist::GroupConfig gc;
    gc.model_path = model->file().path();
    gc.max_ctx = e->n_ctx_;
    gc.numerics = opts.numerics;
    gc.isa = opts.isa;
    gc.n_threads = std::max(1, opts.n_threads);
    STET_RETURN_IF_ERROR(group->Start(gc));
  }
  Result<std::string> sha = Sha256File(model->file().path());
  if (group) {  // the workers' reports come whatever rank 0's hash gave: the collective must end
    Status loaded = group->AwaitLoaded(sha.ok() ? *sha : std::string());
    if (sha.ok()) STET_RETURN_IF_ERROR(loaded);
  }
  if (!sha.ok()) return sha.status();
  e->model_sha256_ = std::move(*sha);
  e->kv_type_ = opts.kv_type;
  e->numerics_ = opts.numerics;
  e->model_ = std::move(model);
  e->SetFingerprint();
  e->tokenizer_ = std::move(tokenizer);
  try {  // the KV pool is the engine's one large allocation: too large is an error, not a crash
    e->impl_ = std::make_unique<Impl>(*e, opts, e->n_ctx_, n_blocks, std::move(group));
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("the KV cache (" + std::to_string(n_blocks) + " blocks of " +
                             std::to_string(opts.block_size) +
                             " positions) does not fit in memory; lower the context (-c) or "
                             "the sequences (--max-seqs)");
  }
  e->impl_->stats.kv_blocks_total = n_blocks;
  if (draft) {  // its own pool: as many blocks and slots as the target's
    DraftModel::Options d;
    d.isa = opts.isa;
    d.numerics = opts.numerics;
    d.n_ctx = e->n_ctx_;
    d.n_blocks = n_blocks;
    d.block_size = opts.block_size;
    d.n_slots = opts.max_seqs;
    d.max_batch_tokens = opts.max_batch_tokens;
    d.chunk_size = opts.chunk_size;
    e->impl_->draft = std::make_unique<DraftModel>(std::move(draft), e->tokenizer_->eog_ids(),
                                                   &e->impl_->pool, d);
  }
  e->impl_->thread = std::thread([eng = e.get()] { eng->Loop(); });
  return e;
}

Result<LoadedModel> LoadModelAndTokenizer(const std::string& path, bool progress, TpComm* tp) {
  LoadedModel out;
  STET_ASSIGN_OR_RETURN(out.model,
                        Model::LoadShard(path, tp ? tp->rank() : 0, tp ? tp->size() : 1, progress));
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
  STET_ASSIGN_OR_RETURN(LoadedModel loaded, LoadModelAndTokenizer(path, progress, opts.tp));
  return Create(std::move(loaded.model), std::move(loaded.tokenizer), opts);
}

Engine::~Engine() {
  if (!impl_) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

const TokenTrie& Engine::vocab_trie() const {
  std::call_once(impl_->trie_once, [this] {
    const Tokenizer& tok = tokenizer();
    const int n = tok.n_vocab();
    std::vector<std::string> pieces(n);
    for (int32_t id = 0; id < n; ++id) {
      const TokenType t = tok.type(id);
      if (tok.IsEog(id) || t == TokenType::kControl || t == TokenType::kUnused ||
          t == TokenType::kUnknown)
        continue;
      pieces[id] = tok.TokenToPiece(id);
    }
    impl_->trie = std::make_unique<TokenTrie>(pieces);
  });
  return *impl_->trie;
}

Result<Engine::Submitted> Engine::Submit(RequestParams params, Callback on_event) {
  STET_RETURN_IF_ERROR(ValidateRequest(params, limits()));
  STET_RETURN_IF_ERROR(health());
  if (!params.sampling.seed) params.sampling.seed = NewSeed();
  auto r = std::make_shared<RequestState>();
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
  return Submitted{r->id, *r->params.sampling.seed};
}

void Engine::Cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->cancels.push_back(id);
  }
  impl_->cv.notify_all();
}

Status Engine::health() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->group_error;
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

void Engine::Loop() {
  Impl& I = *impl_;
  std::vector<uint64_t> cancels;
  while (I.Intake(&cancels)) {
    if (I.broken) {  // nothing can run: whatever arrived fails with the group's error
      I.FailGroup(I.group_error);
      I.Collect();
      continue;
    }
    I.ApplyCancellations(cancels);
    I.ProposeDrafts();
    if (!I.sched.PlanStep(&I.plans)) {
      I.Collect();
      I.Heartbeat();
      continue;
    }
    I.PrefillDrafts();
    if (I.RunBatch()) {
      I.ConsumeLogits();
      I.SampleAndEmit();
    }
    I.Collect();
  }
  // Shutdown: everything still in flight ends as cancelled.
  for (auto& sp : I.all) I.Finish(sp.get(), FinishReason::kCancelled);
}

// Waits for work; turns new requests into one waiting sequence per choice.
// False when the engine stops.
bool Engine::Impl::Intake(std::vector<uint64_t>* cancels_out) {
  std::unique_lock<std::mutex> lock(mu);
  PublishStats();
  auto work = [&] {
    return stop || !incoming.empty() || !cancels.empty() || !sched.idle() || weights_task;
  };
  if (leader && !broken) {  // wakes up to keep the idle group proven alive
    cv.wait_for(lock, std::chrono::duration<double>(dist::kHeartbeatS), work);
  } else {
    cv.wait(lock, work);
  }
  if (stop) return false;
  if (weights_task && sched.idle() && (incoming.empty() || BehindWeights(*incoming.front())))
    ApplyWeights();
  while (!incoming.empty() && !BehindWeights(*incoming.front())) {
    auto r = incoming.front();
    incoming.pop_front();
    if (weights_epoch > 0) {  // a prefix-cache scope of these weights' own
      const uint64_t key[2] = {r->params.cache_salt, weights_epoch};
      r->params.cache_salt = Fnv1a64(key, sizeof key);
    }
    for (int c = 0; c < r->params.n; ++c) {
      auto s = std::make_unique<Sequence>();
      s->req = r;
      s->choice = c;
      s->tokens = r->params.prompt;
      s->n_prompt = static_cast<int>(s->tokens.size());
      s->max_new = std::min(r->params.max_tokens, n_ctx - s->n_prompt);
      s->text = std::make_unique<TextStream>(engine.tokenizer(), &r->params.stop);
      if (r->params.speculative.value_or(spec.mode != SpecMode::kOff)) s->spec_k = spec.k;
      if (r->params.grammar) {
        s->grammar = std::make_unique<GrammarMatcher>(r->params.grammar);
        Status st = s->grammar->Init();  // ValidateRequest ran the same: cannot fail here
        STET_CHECK_MSG(st.ok(), st.ToString().c_str());
      }
      if (c > 0 && r->params.prompt_logprobs) {
        r->parked.push_back(s.get());  // scored once, by choice 0 (ReleaseParked)
      } else {
        sched.Enqueue(s.get());
      }
      all.push_back(std::move(s));
    }
  }
  cancels_out->clear();
  cancels_out->swap(cancels);
  return true;
}

// Every request that arrived before LoadWeights has finished and nothing
// runs: the weights change here, between two steps.
void Engine::Impl::ApplyWeights() {
  weights_task->status = engine.model_->ReplaceTensors(*weights_task->values);
  if (weights_task->status.ok()) {
    ++weights_epoch;
    engine.SetFingerprint();
  }
  weights_task->done = true;
  weights_task = nullptr;
  cv.notify_all();
}

Status Engine::LoadWeights(const std::vector<TensorValues>& values) {
  std::lock_guard<std::mutex> one_at_a_time(load_mu_);
  Impl::WeightsTask task;
  task.values = &values;
  std::unique_lock<std::mutex> lock(impl_->mu);
  if (impl_->stop) return Cancelled("the engine is shutting down");
  task.barrier = impl_->next_id;
  impl_->weights_task = &task;
  impl_->cv.notify_all();
  impl_->cv.wait(lock, [&] { return task.done || impl_->stop; });
  if (!task.done) {
    impl_->weights_task = nullptr;
    return Cancelled("the engine is shutting down");
  }
  return task.status;
}

void Engine::SetFingerprint() {
  FingerprintInputs fi{model_sha256_, model_->WeightsDigest(), kv_type_, numerics_};
  std::lock_guard<std::mutex> lock(fp_mu_);
  fingerprint_ = Fingerprint(fi);
  fingerprint_descriptor_ = FingerprintDescriptor(fi);
}

std::string Engine::fingerprint() const {
  std::lock_guard<std::mutex> lock(fp_mu_);
  return fingerprint_;
}

std::string Engine::fingerprint_descriptor() const {
  std::lock_guard<std::mutex> lock(fp_mu_);
  return fingerprint_descriptor_;
}

void Engine::Impl::ApplyCancellations(const std::vector<uint64_t>& ids) {
  for (auto& sp : all) {
    Sequence* s = sp.get();
    if (s->finished) continue;
    if (std::find(ids.begin(), ids.end(), s->req->id) != ids.end()) s->req->cancelled = true;
    if (s->req->cancelled) Finish(s, FinishReason::kCancelled);
  }
}

// Drafts for the sequences about to decode that speculate: prompt lookup over
// their tokens, or the draft model's greedy continuation (all of them in one
// batch), at most one fewer than the tokens they may still emit (the row after
// a last token would be wasted). The scheduler keeps what budget and KV
// blocks allow; a sequence preempted meanwhile is simply not planned. A
// waiting (preempted) sequence's draft KV goes back to the draft pool.
void Engine::Impl::ProposeDrafts() {
  draft_work.clear();
  std::vector<Sequence*> spec_seqs;
  int decoding = 0;
  for (auto& sp : all) {
    Sequence* s = sp.get();
    s->draft.clear();
    if (draft && s->slot < 0) draft->Release(s);
    if (s->finished || s->slot < 0) continue;
    if (static_cast<int>(s->tokens.size()) - s->n_computed != 1) continue;
    ++decoding;
    if (s->spec_k <= 0) continue;
    if (s->req->params.prompt_logprobs && !s->prompt_scored) continue;  // scoring: every row
    spec_seqs.push_back(s);
  }
  // Drafts pay while a step's decode rows stay few (the weights are read once
  // for all of them); a busy batch is compute-bound already, so the step's
  // draft rows share what is left of kSpecRowBudget. Speed only: the tokens are
  // the same whatever the drafts.
  const int share = DraftShare(decoding, static_cast<int>(spec_seqs.size()));
  for (Sequence* s : spec_seqs) {
    const int k = std::min({s->spec_k, share, s->max_new - s->n_generated - 1});
    if (k <= 0) continue;
    if (draft) {
      draft_work.push_back({s, k});
    } else {
      s->draft = PromptLookupDraft(s->tokens, k, spec.ngram_min, spec.ngram_max);
    }
  }
  // A draft forward error only costs this step its drafts.
  if (!draft_work.empty()) (void)draft->Propose(draft_work);
}

// The draft model prefills what the target prefills this step (up to, not
// including, a sequence's last token, whose row gives its first draft), so a
// drafting sequence's first decode steps do not also carry its prompt.
void Engine::Impl::PrefillDrafts() {
  if (!draft) return;
  draft_work.clear();
  for (const StepPlan& pl : plans) {
    Sequence* s = pl.seq;
    const int last = static_cast<int>(s->tokens.size()) - 1;
    if (s->spec_k <= 0 || pl.n_draft > 0 || pl.start >= last) continue;  // not a prefill
    draft_work.push_back({s, 0, std::min(pl.start + pl.count, last)});
  }
  if (!draft_work.empty()) (void)draft->Propose(draft_work);
}

void Engine::Impl::Finish(Sequence* s, FinishReason why, const std::string& error) {
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
  sched.Remove(s);
  if (draft) draft->Release(s);
  ++finished;
  if (s->req->callback) s->req->callback(ev);
  if (s->choice == 0 && !s->req->parked.empty()) {  // ended before it scored the prompt
    std::vector<Sequence*> parked;
    parked.swap(s->req->parked);
    for (Sequence* p : parked) Finish(p, why, error);
  }
}

// Choice 0 scored the prompt: the choices waiting on it get the same scores
// (and, through the prefix cache, its prompt's KV) and join the queue.
void Engine::Impl::ReleaseParked(RequestState& r, const RequestEvent& scored) {
  std::vector<Sequence*> parked;
  parked.swap(r.parked);
  for (Sequence* p : parked) {
    if (p->finished) continue;
    p->prompt_scored = true;
    RequestEvent ev = scored;
    ev.choice = p->choice;
    if (r.callback) r.callback(ev);
    sched.Enqueue(p);
  }
}

void Engine::Impl::PublishStats() {
  EngineStats& st = stats;
  st.waiting = sched.n_waiting() + static_cast<int>(incoming.size());
  st.running = sched.n_running();
  st.kv_blocks_used = sched.blocks().used();
  st.prefix_lookup_tokens = sched.blocks().lookup_tokens();
  st.prefix_hit_tokens = sched.blocks().hit_tokens();
  st.prompt_tokens = prompt_tokens;
  st.generated_tokens = generated_tokens;
  st.steps = steps;
  st.preemptions = sched.preemptions();
  st.requests_finished = finished;
  st.spec_draft_tokens = spec_drafted;
  st.spec_accepted_tokens = spec_accepted;
  st.max_waiting = std::max(st.max_waiting, st.waiting);
  st.max_running = std::max(st.max_running, st.running);
}

// The planned positions as one forward batch; logits for each sampling row and,
// while a prompt is being scored, for every one of its rows. A failure ends
// every planned sequence with kError.
bool Engine::Impl::RunBatch() {
  batch.clear();
  for (const StepPlan& pl : plans) {
    const Sequence* s = pl.seq;
    // Scoring a prompt, or verifying drafts: logits for every row.
    const bool all_logits = (s->req->params.prompt_logprobs && !s->prompt_scored) || pl.n_draft > 0;
    const int n_tokens = static_cast<int>(s->tokens.size());
    for (int i = 0; i < pl.count; ++i) {
      const int pos = pl.start + i;
      const bool last = i + 1 == pl.count;
      const int32_t token = pos < n_tokens ? s->tokens[pos] : s->draft[pos - n_tokens];
      batch.push_back({token, pos, s->slot, (last && pl.sample) || all_logits});
    }
  }
  logits.clear();
  // Tensor parallelism: the workers get the step first, then every rank runs it.
  Status st = leader ? leader->Step(batch, kv) : Status::Ok();
  if (st.ok()) st = fwd.Run(batch, kv, &logits);
  ++steps;
  if (st.ok()) return true;
  if (leader) {  // a collective failed: the group is gone, not just this step
    FailGroup(st);
    return false;
  }
  for (StepPlan& pl : plans) Finish(pl.seq, FinishReason::kError, st.ToString());
  return false;
}

void Engine::Impl::Heartbeat() {
  if (!leader || broken) return;
  Status st = leader->Heartbeat();
  if (!st.ok()) FailGroup(st);
}

// The group broke: every sequence (and every later request) ends with kError
// and the message; Submit refuses new ones (health()).
void Engine::Impl::FailGroup(const Status& st) {
  if (!broken) {
    broken = true;
    std::lock_guard<std::mutex> lock(mu);
    group_error = IoError("tensor parallelism: the group of " + std::to_string(leader->size()) +
                          " ranks failed, this engine cannot compute any more: " + st.message());
    std::fprintf(stderr, "stet: %s\n", group_error.message().c_str());
  }
  const std::string msg = group_error.message();
  for (auto& sp : all) Finish(sp.get(), FinishReason::kError, msg);
}

// Prompt positions' scores (echo / prompt_logprobs), rows [row, row + count).
void Engine::Impl::ScorePrompt(StepPlan& pl, size_t row) {
  Sequence* s = pl.seq;
  const RequestParams& p = s->req->params;
  for (int i = 0; i < pl.count; ++i) {
    const int pos = pl.start + i;
    if (pos + 1 >= s->n_prompt) continue;
    const float* lr = &logits[(row + i) * n_vocab];
    TokenOut t;
    t.id = s->tokens[pos + 1];
    t.logprob = LogSoftmaxAt(lr, n_vocab, t.id, sampler.isa());
    if (p.top_logprobs > 0) t.top = TopLogprobs(lr, n_vocab, p.top_logprobs, sampler.isa());
    t.text = engine.tokenizer().TokenToPiece(t.id);
    s->prompt_scores.push_back(std::move(t));
  }
}

// In batch order: which logits row each plan samples from, prompt scores, the
// positions now in the cache (and the prefix cache), kPromptScored events.
void Engine::Impl::ConsumeLogits() {
  size_t row = 0;
  for (StepPlan& pl : plans) {
    Sequence* s = pl.seq;
    const RequestParams& p = s->req->params;
    if (p.prompt_logprobs && !s->prompt_scored) {
      ScorePrompt(pl, row);
      pl.logits_row = row + pl.count - 1;
      row += pl.count;
    } else if (pl.n_draft > 0) {
      pl.logits_row = row;  // the first of count rows
      row += pl.count;
    } else if (pl.sample) {
      pl.logits_row = row++;
    }
    // Prompt positions computed (not decode rows, not cache hits).
    prompt_tokens +=
        std::max(0, std::min(pl.start + pl.count, s->n_prompt) - std::min(pl.start, s->n_prompt));
    sched.Computed(pl);
    if (p.prompt_logprobs && !s->prompt_scored && s->n_computed >= s->n_prompt) {
      s->prompt_scored = true;
      RequestEvent ev;
      ev.kind = RequestEvent::Kind::kPromptScored;
      ev.choice = s->choice;
      TokenOut first;
      first.id = s->tokens[0];
      first.text = engine.tokenizer().TokenToPiece(first.id);
      ev.prompt_tokens.push_back(first);
      for (auto& t : s->prompt_scores) ev.prompt_tokens.push_back(std::move(t));
      s->prompt_scores.clear();
      if (s->req->callback) s->req->callback(ev);
      if (!s->req->parked.empty()) ReleaseParked(*s->req, ev);
    }
  }
}

void Engine::Impl::SampleAndEmit() {
  for (const StepPlan& pl : plans) {
    if (!pl.sample || pl.seq->finished) continue;
    if (pl.n_draft > 0) {
      SampleSpeculative(pl);
    } else {
      SampleOne(pl.seq, pl.logits_row);
    }
  }
}

// A decode that carried drafts: its rows are sampled in order, each exactly as
// plain decoding samples that position (VerifyDraft stops at the first token
// that differs from the draft, which is emitted as the correction). The K/V of
// the positions whose input was verified stay; the rest are rolled back.
void Engine::Impl::SampleSpeculative(const StepPlan& pl) {
  Sequence* s = pl.seq;
  const std::vector<int32_t> draft(s->draft.begin(), s->draft.begin() + pl.n_draft);
  const Verdict v = VerifyDraft(draft, [&](int row) {
    SampleOne(s, pl.logits_row + row);
    return Emitted{s->tokens.back(), s->finished};
  });
  spec_drafted += pl.n_draft;
  spec_accepted += v.accepted;
  if (v.ended) return;  // Finish released the sequence's KV
  sched.Accept(s, pl.start + 1 + v.accepted);
  s->spec_k = NextSpecK(s->spec_k, spec.k, pl.n_draft, v.accepted);
}

// One token for one choice: picked by the sampler (keyed by seed, choice and
// position), emitted with the text it releases; the choice ends on an end
// marker or stop id (kStop, no text), a completed stop string, or max_tokens.
void Engine::Impl::SampleOne(Sequence* s, size_t row) {
  const RequestParams& p = s->req->params;
  if (s->n_generated >= s->max_new) {  // max_tokens 0 (scoring) or the context is full
    Finish(s, FinishReason::kLength);
    return;
  }
  const float* raw = &logits[row * n_vocab];
  const int pos = static_cast<int>(s->tokens.size());
  const uint8_t* allowed = nullptr;
  if (s->grammar) {
    allowed = GrammarMask(s);
    if (!allowed) return;  // finished with kError
  }
  if (s->n_generated < p.min_tokens) {
    allowed = MinTokensMask(s, allowed);
    if (!allowed) return;  // finished with kError
  }
  TokenPick pick = sampler.Pick(raw, n_vocab, p.sampling, {&s->tokens, &s->out_counts},
                                p.top_logprobs, static_cast<uint32_t>(s->choice), pos, allowed);
  TokenOut t;
  t.id = pick.id;
  t.logprob = pick.logprob;
  t.top = std::move(pick.top);
  if (p.logits_hash) t.logits_hash = Fnv1a64(raw, sizeof(float) * n_vocab);
  if (p.return_logits) t.logits.assign(raw, raw + n_vocab);
  t.text = engine.tokenizer().TokenToPiece(t.id);
  const int32_t id = t.id;
  s->tokens.push_back(id);
  ++s->n_generated;
  ++generated_tokens;
  ++s->out_counts[id];
  RequestEvent ev;
  ev.kind = RequestEvent::Kind::kToken;
  ev.choice = s->choice;
  const bool is_stop_id = std::find(p.stop_ids.begin(), p.stop_ids.end(), id) != p.stop_ids.end();
  // Under a grammar an end-of-generation token is only drawn where the grammar may end: it ends.
  const bool eog = engine.tokenizer().IsEog(id) && (!p.ignore_eos || s->grammar);
  if (eog || is_stop_id) {
    ev.end_marker = true;
    ev.token = std::move(t);
    if (s->req->callback) s->req->callback(ev);  // the end marker, with its logprob; no text
    Finish(s, FinishReason::kStop);
    return;
  }
  if (s->grammar) {
    auto ok = s->grammar->Accept(t.text);  // the mask allowed these bytes
    if (!ok.ok() || !*ok) {
      Finish(s, FinishReason::kError,
             ok.ok() ? "the grammar rejected an allowed token" : ok.status().message());
      return;
    }
  }
  bool stopped = false;
  ev.text_delta = s->text->Push(id, &stopped);
  ev.token = std::move(t);
  if (s->req->callback) s->req->callback(ev);
  if (stopped) {
    Finish(s, FinishReason::kStop);
  } else if (s->n_generated >= s->max_new) {
    Finish(s, FinishReason::kLength);
  }
}

// The tokens a constrained choice may draw now: those whose bytes the grammar
// accepts, end-of-generation and stop ids where the grammar may end. Null, the
// choice finished with kError, when matching exceeds the grammar's limits or
// nothing is allowed.
const uint8_t* Engine::Impl::GrammarMask(Sequence* s) {
  const Tokenizer& tok = engine.tokenizer();
  Status st = s->grammar->FillMask(engine.vocab_trie(), &mask);
  if (!st.ok()) {
    Finish(s, FinishReason::kError, st.message());
    return nullptr;
  }
  if (s->grammar->CanEnd()) {
    for (int32_t id : tok.eog_ids()) mask[id] = 1;
    for (int32_t id : s->req->params.stop_ids) mask[id] = 1;
  }
  if (std::find(mask.begin(), mask.end(), uint8_t{1}) == mask.end()) {
    Finish(s, FinishReason::kError, "grammar: no token of the vocabulary can continue the output");
    return nullptr;
  }
  return mask.data();
}

// Before min_tokens tokens, the choice may not end: end-of-generation ids
// (unless ignore_eos, where they do not end it) and stop ids are taken out of
// `allowed` (the grammar's mask, or null: every token). A mask is a function
// of the choice's own state, so batching still cannot change a bit. Null, the
// choice finished with kError, when nothing is left.
const uint8_t* Engine::Impl::MinTokensMask(Sequence* s, const uint8_t* allowed) {
  const RequestParams& p = s->req->params;
  if (allowed == nullptr) mask.assign(n_vocab, 1);  // else `allowed` is mask.data()
  if (!p.ignore_eos) {
    for (int32_t id : engine.tokenizer().eog_ids()) mask[id] = 0;
  }
  for (int32_t id : p.stop_ids) mask[id] = 0;
  if (std::find(mask.begin(), mask.end(), uint8_t{1}) == mask.end()) {
    Finish(s, FinishReason::kError,
           "min_tokens: no token of the vocabulary may continue the output");
    return nullptr;
  }
  return mask.data();
}

}  // namespace stet
