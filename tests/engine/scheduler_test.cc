// The scheduling policy on its own (no model): decode before prefill, chunks
// within the token budget, FCFS admission, youngest-first preemption that puts
// the sequence back in arrival order, and prefix-cache publish/acquire.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

namespace stet::engine_internal {
namespace {

struct Harness {
  explicit Harness(SchedulerOptions o, int n_blocks, int n_slots)
      : sched(o, n_blocks, n_slots,
              [this](int slot, const std::vector<int32_t>& b) { tables[slot] = b; }) {}

  // A sequence of `n_prompt` tokens (token i = base + i) arriving now.
  Sequence* Add(int n_prompt, int base = 100) {
    auto r = std::make_shared<RequestState>();
    r->id = r->arrival = ++arrivals;
    auto s = std::make_unique<Sequence>();
    s->req = r;
    for (int i = 0; i < n_prompt; ++i) s->tokens.push_back(base + i);
    s->n_prompt = n_prompt;
    seqs.push_back(std::move(s));
    sched.Enqueue(seqs.back().get());
    return seqs.back().get();
  }
  // Runs one step: every plan's positions computed; sampling plans append a token.
  std::vector<StepPlan> Step() {
    std::vector<StepPlan> plans;
    if (!sched.PlanStep(&plans)) return plans;
    for (const StepPlan& p : plans) {
      sched.Computed(p);
      if (p.sample) p.seq->tokens.push_back(7);
    }
    return plans;
  }

  Scheduler sched;
  std::map<int, std::vector<int32_t>> tables;
  std::vector<std::unique_ptr<Sequence>> seqs;
  uint64_t arrivals = 0;
};

TEST(Scheduler, PrefillInChunksThenDecodeFirst) {
  Harness h({/*block_size=*/4, /*max_batch_tokens=*/8, /*chunk_size=*/5, false}, 64, 4);
  Sequence* a = h.Add(12);
  auto p1 = h.Step();
  ASSERT_EQ(p1.size(), 1u);
  EXPECT_EQ(p1[0].start, 0);
  EXPECT_EQ(p1[0].count, 5);  // the chunk size
  EXPECT_FALSE(p1[0].sample);
  h.Step();  // positions 5..9
  Sequence* b = h.Add(20);
  auto p3 = h.Step();  // a: the last 2 prompt positions (samples); b: admitted with the rest
  ASSERT_EQ(p3.size(), 2u);
  EXPECT_EQ(p3[0].seq, a);
  EXPECT_EQ(p3[0].count, 2);
  EXPECT_TRUE(p3[0].sample);
  EXPECT_EQ(p3[1].seq, b);
  EXPECT_EQ(p3[1].count, 5);  // min(chunk 5, budget 8 - 2)
  auto p4 = h.Step();         // a decodes first (1 position), then b's next chunk
  ASSERT_EQ(p4.size(), 2u);
  EXPECT_EQ(p4[0].seq, a);
  EXPECT_EQ(p4[0].count, 1);
  EXPECT_EQ(p4[1].seq, b);
  EXPECT_EQ(a->slot >= 0 && b->slot >= 0 && a->slot != b->slot, true);
  EXPECT_EQ(h.tables[a->slot].size(), 4u);  // 13 positions in blocks of 4
}

TEST(Scheduler, AdmitsInArrivalOrderAsSlotsFree) {
  Harness h({4, 64, 64, false}, 64, /*n_slots=*/1);
  Sequence* a = h.Add(6);
  Sequence* b = h.Add(3);
  auto p = h.Step();
  ASSERT_EQ(p.size(), 1u);  // one slot: b waits although the budget has room
  EXPECT_EQ(p[0].seq, a);
  EXPECT_EQ(h.sched.n_waiting(), 1);
  h.sched.Remove(a);  // a finishes: its slot and blocks come back
  EXPECT_EQ(h.sched.blocks().used(), 0);
  auto q = h.Step();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].seq, b);
}

// A finished sequence's blocks come back so that the next sequence gets them in
// ascending order again (its KV head rows one ascending stream in the pool,
// model/paged_kv.h), whatever order they were taken in.
TEST(Scheduler, FreedBlocksAreHandedOutAgainInAscendingOrder) {
  Harness h({4, 64, 64, false}, 8, /*n_slots=*/1);
  Sequence* a = h.Add(14);  // 4 blocks
  h.Step();
  ASSERT_EQ(a->blocks, (std::vector<int32_t>{0, 1, 2, 3}));
  h.sched.Remove(a);
  Sequence* b = h.Add(10, 500);  // 3 blocks, another prompt: no prefix hit
  h.Step();
  EXPECT_EQ(b->blocks, (std::vector<int32_t>{0, 1, 2}));
}

TEST(Scheduler, PreemptsTheYoungestAndRequeuesItInArrivalOrder) {
  // 6 blocks of 2: three sequences of 4 prompt tokens hold 2 blocks each.
  Harness h({2, 64, 64, false}, 6, 4);
  Sequence* a = h.Add(4);
  Sequence* b = h.Add(4);
  Sequence* c = h.Add(4);
  h.Step();  // all three prefilled and sampled: 5 tokens each, 4 computed
  EXPECT_EQ(h.sched.n_running(), 3);
  EXPECT_EQ(h.sched.blocks().available(), 0);
  Sequence* d = h.Add(2);  // arrives later than all of them
  auto p = h.Step();       // each decode needs a third block: c (the youngest) gives way
  EXPECT_EQ(h.sched.preemptions(), 1);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].seq, a);
  EXPECT_EQ(p[1].seq, b);
  ASSERT_EQ(h.sched.n_waiting(), 2);
  EXPECT_EQ(h.sched.waiting()[0], c);  // back in arrival order, ahead of d
  EXPECT_EQ(h.sched.waiting()[1], d);
  EXPECT_EQ(c->n_computed, 0);  // recomputed from scratch later
  EXPECT_TRUE(c->blocks.empty());
  EXPECT_EQ(c->slot, -1);
}

TEST(Scheduler, PublishesFullBlocksAndAdmissionsTakeTheCachedPrefix) {
  Harness h({4, 64, 64, /*prefix_cache=*/true}, 32, 4);
  Sequence* a = h.Add(10, 500);
  h.Step();  // 10 positions: blocks 0 and 1 are full and published
  EXPECT_EQ(a->hashes.size(), 2u);
  h.sched.Remove(a);             // published blocks stay cached (evictable)
  Sequence* b = h.Add(13, 500);  // same first 10 tokens
  auto p = h.Step();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].seq, b);
  EXPECT_EQ(p[0].start, 8);  // two cached blocks: computing starts at position 8
  EXPECT_EQ(b->cached_prompt_tokens, 8);
  Sequence* c = h.Add(13, 900);  // a different prefix: no hit
  auto q = h.Step();
  bool saw_c = false;
  for (const StepPlan& pl : q) {
    if (pl.seq == c) {
      saw_c = true;
      EXPECT_EQ(pl.start, 0);
    }
  }
  EXPECT_TRUE(saw_c);
  EXPECT_EQ(c->cached_prompt_tokens, 0);
}

// Speculative drafts ride on the decode row with what budget and blocks are
// left; only verified positions count as computed or reach the prefix cache,
// and blocks that held only rejected drafts go back.
TEST(Scheduler, DraftsAreVerifiedBeforeTheyCountOrArePublished) {
  Harness h({/*block_size=*/4, /*max_batch_tokens=*/6, 64, /*prefix_cache=*/true}, 8, 4);
  Sequence* a = h.Add(7, 500);
  h.Step();  // positions 0..5 (the budget)
  h.Step();  // position 6, then a sampled token: 8 tokens, 7 computed
  ASSERT_EQ(a->tokens.size(), 8u);
  a->draft = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<StepPlan> plans;
  ASSERT_TRUE(h.sched.PlanStep(&plans));
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].start, 7);
  EXPECT_EQ(plans[0].n_draft, 5);  // the budget: 6 positions, one of them the decode row
  EXPECT_EQ(plans[0].count, 6);
  EXPECT_EQ(a->blocks.size(), 4u);  // positions 0..12
  h.sched.Computed(plans[0]);
  EXPECT_EQ(a->n_computed, 8);      // the drafts do not count yet
  EXPECT_EQ(a->hashes.size(), 2u);  // blocks 0 and 1 hold verified positions only
  // Verification: drafts 1 and 2 accepted, then a correction (99).
  for (int32_t t : {1, 2, 99}) a->tokens.push_back(t);
  h.sched.Accept(a, 10);
  EXPECT_EQ(a->n_computed, 10);
  EXPECT_EQ(a->hashes.size(), 2u);  // block 2 is not full of verified positions
  EXPECT_EQ(a->blocks.size(), 3u);  // block 3 held rejected drafts only
  EXPECT_EQ(h.tables[a->slot].size(), 3u);
  EXPECT_EQ(h.sched.blocks().used(), 3);
  a->draft.clear();
  auto next = h.Step();  // a plain decode of position 10 (token 99)
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].start, 10);
  EXPECT_EQ(next[0].count, 1);
  EXPECT_EQ(next[0].n_draft, 0);
}

TEST(Scheduler, DraftsNeverPreemptAndTakeOnlyFreeBlocks) {
  Harness h({2, 64, 64, false}, 6, 4);  // 6 blocks of 2
  Sequence* a = h.Add(4);
  Sequence* b = h.Add(4);
  h.Step();  // both prefilled (2 blocks each) and sampled
  a->draft = {1, 2, 3, 4, 5, 6};
  b->draft = {1, 2, 3};
  std::vector<StepPlan> plans;
  ASSERT_TRUE(h.sched.PlanStep(&plans));
  ASSERT_EQ(plans.size(), 2u);
  // Each decode row takes one of the two free blocks; a draft fits the other slot in it.
  EXPECT_EQ(plans[0].n_draft, 1);
  EXPECT_EQ(plans[1].n_draft, 1);
  EXPECT_EQ(h.sched.preemptions(), 0);
  EXPECT_EQ(h.sched.blocks().available(), 0);
}

}  // namespace
}  // namespace stet::engine_internal
