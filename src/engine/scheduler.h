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

// One sequence's share of a step: positions [start, start + count) of its tokens.
struct StepPlan {
  Sequence* seq;
  int start;
  int count;
  bool sample;            // the last fed position's logits pick the next token
  size_t logits_row = 0;  // filled by the engine: that position's row of logits
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
  // sequence's newly completed full blocks go to the prefix cache.
  void Computed(const StepPlan& plan);

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
