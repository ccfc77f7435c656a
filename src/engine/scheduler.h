// The engine's scheduling policy, apart from the model and the sampler: which
// sequences run in a step and how many positions each feeds. In order: decode
// rows first (one position each), then running prefills in chunks, then
// admissions in arrival order (FCFS) while the token budget, free slots and
// KV blocks last. When blocks run short the youngest running sequence is
// preempted: its KV is released and it waits again, in arrival order, to be
// recomputed later (batch invariance makes the recompute bit-exact). Full
// blocks are published to the prefix cache as they complete; an admission
// takes the longest cached prefix of its tokens. None of this can change a
// result bit — only which step computes what (tests/engine/scheduler_test.cc).
// Speculative drafts ride on decode rows with what budget and free blocks are
// left after every decode row; they never preempt, and never reach the prefix
// cache before they are verified.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "engine/block_manager.h"
#include "engine/sequence.h"

namespace stet::engine_internal {

struct SchedulerOptions {
  int block_size = 16;         // KV positions per block
  int max_batch_tokens = 512;  // positions fed per step
  int chunk_size = 256;        // prefill positions per sequence per step
  bool prefix_cache = true;
};

// One sequence's share of a step: positions [start, start + count) of its
// tokens; with n_draft > 0 (a decode that speculates), the last n_draft of
// those positions are fed seq->draft[0 .. n_draft) and verified after the step.
struct StepPlan {
  Sequence* seq;
  int start;
  int count;
  bool sample;            // the last fed position's logits pick the next token
  size_t logits_row = 0;  // filled by the engine: that position's row of logits (the first
                          // of the n_draft + 1 rows of a speculative decode)
  int n_draft = 0;
};

class Scheduler {
 public:
  // set_table(slot, blocks) installs a slot's block table in the KV cache.
  using SetTable = std::function<void(int slot, const std::vector<int32_t>& blocks)>;
  Scheduler(const SchedulerOptions& opts, int n_blocks, int n_slots, SetTable set_table);

  void Enqueue(Sequence* s);  // a new sequence: the youngest, last in FCFS order
  void Remove(Sequence* s);   // finished or cancelled: out of the queues, KV released

  // Plans the next step into *plans (cleared first). False when nothing can
  // run now; it may then have preempted the youngest sequence to make room.
  bool PlanStep(std::vector<StepPlan>* plans);
  // After the step ran: the plan's positions are in the KV cache, and the
  // sequence's newly completed full blocks go to the prefix cache. Draft
  // positions do not count until Accept says so.
  void Computed(const StepPlan& plan);
  // After verification: positions [0, n_valid) hold verified K/V (n_valid is
  // the position of the last emitted token). Publishes the newly full blocks
  // and releases blocks that only held rejected drafts; rows of rejected
  // drafts below the kept blocks' end are rewritten before anyone reads them.
  void Accept(Sequence* s, int n_valid);

  bool idle() const { return waiting_.empty() && running_.empty(); }
  int n_waiting() const { return static_cast<int>(waiting_.size()); }
  int n_running() const { return static_cast<int>(running_.size()); }
  const std::deque<Sequence*>& waiting() const { return waiting_; }
  const BlockManager& blocks() const { return blocks_; }
  int64_t preemptions() const { return preemptions_; }

 private:
  int BlocksNeeded(const Sequence* s, int upto) const;  // for positions [0, upto)
  void Grow(Sequence* s, int upto);
  void ReleaseKv(Sequence* s);
  void Preempt(Sequence* s);
  void PlanDecodes(int* budget, std::vector<StepPlan>* plans);
  void PlanDrafts(int* budget, std::vector<StepPlan>* plans);
  void Publish(Sequence* s);
  bool PlanPrefill(Sequence* s, int* budget, std::vector<StepPlan>* plans);
  void Admit(int* budget, std::vector<StepPlan>* plans);

  SchedulerOptions opts_;
  BlockManager blocks_;
  SetTable set_table_;
  std::deque<Sequence*> waiting_;   // FCFS by arrival
  std::vector<Sequence*> running_;  // in admission order: the back is the youngest
  std::vector<int> free_slots_;
  int64_t preemptions_ = 0;
};

}  // namespace stet::engine_internal
