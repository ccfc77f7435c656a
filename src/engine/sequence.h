// Engine-internal state of one choice of one request while it is in flight.
// Invariant: tokens holds only emitted (verified) tokens; draft tokens live
// apart, in `draft`, until the sampler confirms them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "engine/grammar_matcher.h"
#include "engine/text_stream.h"

namespace stet::engine_internal {

struct Sequence;

struct RequestState {
  uint64_t id = 0;
  RequestParams params;  // validated; params.sampling.seed is always set
  Engine::Callback callback;
  std::atomic<bool> cancelled{false};
  uint64_t arrival = 0;  // FCFS order
  // With prompt_logprobs and n > 1, choices 1..n-1 wait here (owned by the
  // engine's list) until choice 0 has scored the prompt: the prompt is scored
  // once and they reuse its scores and its cached prefix.
  std::vector<Sequence*> parked;
};

struct Sequence {
  std::shared_ptr<RequestState> req;
  int choice = 0;
  std::vector<int32_t> tokens;  // prompt, then generated
  int n_prompt = 0;
  int max_new = 0;  // generation limit (max_tokens clamped to the context)
  int n_generated = 0;
  int n_computed = 0;            // positions whose KV is in the cache
  int slot = -1;                 // KV slot while running
  std::vector<int32_t> blocks;   // block table (position / block_size)
  std::vector<uint64_t> hashes;  // chain hashes of the leading full blocks published/acquired
  int cached_prompt_tokens = 0;  // prompt positions served by the prefix cache (first admission)
  bool admitted_once = false;
  bool prompt_scored = false;  // kPromptScored sent (for a parked choice: choice 0's scores)
  std::vector<TokenOut> prompt_scores;
  std::unique_ptr<TextStream> text;
  std::unordered_map<int32_t, int> out_counts;  // generated-token counts (penalties)
  int spec_k = 0;                               // draft tokens to propose (0: no speculation)
  std::vector<int32_t> draft;                   // this step's proposal (StepPlan::n_draft used)
  // With RequestParams::grammar: the grammar state after the emitted tokens
  // (advanced only by emitted tokens, so drafts and preemption never touch it).
  std::unique_ptr<GrammarMatcher> grammar;
  bool finished = false;
  uint64_t arrival() const { return req->arrival * 1024 + static_cast<uint64_t>(choice); }
};

}  // namespace stet::engine_internal
