#include "engine/scheduler.h"

#include <algorithm>

#include "base/check.h"

namespace stet::engine_internal {

namespace {
int Remaining(const Sequence* s) { return static_cast<int>(s->tokens.size()) - s->n_computed; }
}  // namespace

Scheduler::Scheduler(const SchedulerOptions& opts, int n_blocks, int n_slots, SetTable set_table)
    : opts_(opts), blocks_(n_blocks, opts.block_size), set_table_(std::move(set_table)) {
  for (int s = n_slots - 1; s >= 0; --s) free_slots_.push_back(s);
}

void Scheduler::Enqueue(Sequence* s) { waiting_.push_back(s); }

void Scheduler::Remove(Sequence* s) {
  auto r = std::find(running_.begin(), running_.end(), s);
  if (r != running_.end()) running_.erase(r);
  auto w = std::find(waiting_.begin(), waiting_.end(), s);
  if (w != waiting_.end()) waiting_.erase(w);
  ReleaseKv(s);
}

int Scheduler::BlocksNeeded(const Sequence* s, int upto) const {
  const int want = (upto + opts_.block_size - 1) / opts_.block_size;
  return std::max(0, want - static_cast<int>(s->blocks.size()));
}

void Scheduler::Grow(Sequence* s, int upto) {
  for (int n = BlocksNeeded(s, upto); n > 0; --n) {
    auto b = blocks_.Allocate();
    STET_CHECK(b.has_value());
    s->blocks.push_back(*b);
  }
  set_table_(s->slot, s->blocks);
}

void Scheduler::ReleaseKv(Sequence* s) {
  // Last block first: the free stack then hands them out again in position
  // order (the next sequence's rows of a KV head lie in ascending memory, one
  // stream for attention, model/paged_kv.h), and the prefix cache's LRU evicts a
  // sequence's tail before the blocks its later blocks' hashes chain from.
  for (auto b = s->blocks.rbegin(); b != s->blocks.rend(); ++b) blocks_.Release(*b);
  s->blocks.clear();
  s->hashes.clear();
  s->n_computed = 0;
  if (s->slot >= 0) {
    set_table_(s->slot, {});
    free_slots_.push_back(s->slot);
    s->slot = -1;
  }
}

void Scheduler::Preempt(Sequence* s) {
  ReleaseKv(s);
  running_.erase(std::find(running_.begin(), running_.end(), s));
  auto pos = std::find_if(waiting_.begin(), waiting_.end(),
                          [&](Sequence* w) { return w->arrival() > s->arrival(); });
  waiting_.insert(pos, s);
  ++preemptions_;
}

// Decode rows get their next block first, preempting the youngest until they fit.
void Scheduler::PlanDecodes(int* budget, std::vector<StepPlan>* plans) {
  for (;;) {
    int need = 0;
    for (Sequence* s : running_) {
      if (Remaining(s) == 1) need += BlocksNeeded(s, s->n_computed + 1);
    }
    if (need <= blocks_.available() || running_.size() <= 1) break;
    Preempt(running_.back());
  }
  for (Sequence* s : running_) {
    if (*budget == 0) break;
    if (Remaining(s) != 1) continue;
    if (BlocksNeeded(s, s->n_computed + 1) > blocks_.available()) continue;
    Grow(s, s->n_computed + 1);
    plans->push_back({s, s->n_computed, 1, true});
    --*budget;
  }
  PlanDrafts(budget, plans);
}

// Each decode row extended by as many of its sequence's draft tokens as the
// budget and the free blocks allow (drafts are optional: they never preempt).
void Scheduler::PlanDrafts(int* budget, std::vector<StepPlan>* plans) {
  for (StepPlan& pl : *plans) {
    Sequence* s = pl.seq;
    const int capacity =
        (static_cast<int>(s->blocks.size()) + blocks_.available()) * opts_.block_size -
        (pl.start + 1);
    const int n = std::min({static_cast<int>(s->draft.size()), *budget, capacity});
    if (n <= 0) continue;
    Grow(s, pl.start + 1 + n);
    pl.count += n;
    pl.n_draft = n;
    *budget -= n;
  }
}

// The next chunk of s's prompt (or recompute), as long as budget and blocks allow.
bool Scheduler::PlanPrefill(Sequence* s, int* budget, std::vector<StepPlan>* plans) {
  int chunk = std::min({Remaining(s), opts_.chunk_size, *budget});
  const int capacity =
      (static_cast<int>(s->blocks.size()) + blocks_.available()) * opts_.block_size - s->n_computed;
  chunk = std::min(chunk, capacity);
  if (chunk <= 0) return false;
  Grow(s, s->n_computed + chunk);
  plans->push_back(
      {s, s->n_computed, chunk, s->n_computed + chunk == static_cast<int>(s->tokens.size())});
  *budget -= chunk;
  return true;
}

// FCFS admissions: the longest cached prefix, a slot, and a first chunk — or,
// when no chunk fits, the sequence keeps its place at the head of the queue.
void Scheduler::Admit(int* budget, std::vector<StepPlan>* plans) {
  const int B = opts_.block_size;
  while (*budget > 0 && !waiting_.empty() && !free_slots_.empty()) {
    Sequence* s = waiting_.front();
    // A prompt being scored needs every position's logits: no cache hits for it.
    if (opts_.prefix_cache && !(s->req->params.prompt_logprobs && !s->prompt_scored)) {
      const int max_blocks = (static_cast<int>(s->tokens.size()) - 1) / B;
      s->blocks =
          blocks_.AcquirePrefix(s->tokens, max_blocks, &s->hashes, s->req->params.cache_salt);
      s->n_computed = static_cast<int>(s->blocks.size()) * B;
    }
    if (!s->admitted_once) s->cached_prompt_tokens = std::min(s->n_computed, s->n_prompt);
    s->slot = free_slots_.back();
    free_slots_.pop_back();
    set_table_(s->slot, s->blocks);
    if (!PlanPrefill(s, budget, plans)) {
      ReleaseKv(s);
      break;
    }
    s->admitted_once = true;
    waiting_.pop_front();
    running_.push_back(s);
  }
}

bool Scheduler::PlanStep(std::vector<StepPlan>* plans) {
  plans->clear();
  int budget = opts_.max_batch_tokens;
  PlanDecodes(&budget, plans);
  for (Sequence* s : running_) {
    if (budget == 0) break;
    if (Remaining(s) > 1) PlanPrefill(s, &budget, plans);
  }
  Admit(&budget, plans);
  if (!plans->empty()) return true;
  if (running_.size() > 1) {
    Preempt(running_.back());  // free blocks for the older sequences
  } else {
    STET_CHECK_MSG(!(running_.empty() && !waiting_.empty() && free_slots_.empty()),
                   "engine: waiting sequences but no free slot and nothing running");
  }
  return false;
}

void Scheduler::Computed(const StepPlan& plan) {
  Sequence* s = plan.seq;
  s->n_computed = plan.start + plan.count - plan.n_draft;
  Publish(s);
}

void Scheduler::Accept(Sequence* s, int n_valid) {
  STET_CHECK(n_valid >= s->n_computed && n_valid < static_cast<int>(s->tokens.size()));
  s->n_computed = n_valid;
  Publish(s);
  // Keep the blocks up to the next decode position's; the rest held only rejected drafts.
  const size_t keep = static_cast<size_t>(n_valid / opts_.block_size + 1);
  if (s->blocks.size() <= keep) return;
  for (size_t b = s->blocks.size(); b-- > keep;) blocks_.Release(s->blocks[b]);
  s->blocks.resize(keep);
  set_table_(s->slot, s->blocks);
}

// The sequence's full blocks below n_computed, not yet in the prefix cache, go there.
void Scheduler::Publish(Sequence* s) {
  if (!opts_.prefix_cache) return;
  const int B = opts_.block_size;
  while (static_cast<int>(s->hashes.size()) < s->n_computed / B) {
    const size_t j = s->hashes.size();
    const uint64_t parent = j == 0 ? s->req->params.cache_salt : s->hashes[j - 1];
    const uint64_t h = BlockManager::ChainHash(parent, &s->tokens[j * B], B);
    blocks_.Register(s->blocks[j], h, &s->tokens[j * B]);
    s->hashes.push_back(h);
  }
}

}  // namespace stet::engine_internal
