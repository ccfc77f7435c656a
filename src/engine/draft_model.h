// The draft-model drafter of speculative decoding (SpecMode::kDraft): a second,
// smaller model with the target's tokenizer, run by the engine on its own paged
// KV pool. Each step it brings every drafting sequence's draft KV up to the
// sequence's emitted tokens (prompt included, in chunks, batched across
// sequences), then runs up to k greedy single-row steps batched across them;
// the argmax tokens are the drafts the target verifies. The draft KV of
// rejected drafts is truncated at the next step (to the longest prefix of the
// sequence's tokens it holds). Drafts only decide how many positions a step
// verifies: acceptance uses the target's own sampler, so output never changes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/paged_kv.h"
#include "tokenizer/tokenizer.h"

namespace stet {

// A digest of everything that makes two vocabularies tokenize and detokenize
// alike: model and pre-tokenizer names, every token text, score and type,
// the merges, the special ids and flags.
uint64_t VocabDigest(const VocabData& v);

// Ok when the draft's vocabulary equals the target's (VocabDigest); else
// InvalidArgument naming both files, both digests and the first difference.
Status CheckSameTokenizer(const VocabData& target, const std::string& target_path,
                          const VocabData& draft, const std::string& draft_path);

namespace engine_internal {

struct Sequence;

// One sequence's draft work this step: k > 0, up to k drafts after its
// tokens; k == 0, prefill only — the draft KV brought up to its first `upto`
// tokens (while the target prefills them, so the draft's prompt is not paid
// for in decode steps).
struct DraftWork {
  Sequence* seq;
  int k;
  int upto = 0;
};

class DraftModel {
 public:
  struct Options {
    Isa isa = Isa::kScalar;
    NumericsMode numerics = NumericsMode::kInvariant;
    int n_ctx = 0;  // positions (the engine's context)
    int n_blocks = 0;
    int block_size = 16;
    int n_slots = 1;
    int max_batch_tokens = 512;  // rows per draft forward call
    int chunk_size = 256;        // catch-up rows per sequence per call
  };
  DraftModel(std::unique_ptr<Model> model, std::vector<int32_t> eog_ids, ThreadPool* pool,
             const Options& o);

  // Fills each drafting item's seq->draft (cleared by the caller) with up to k
  // greedy draft tokens, and prefills the others' draft KV. A sequence
  // without room in the draft pool gets no draft (or no prefill).
  // An error from the draft forward leaves every draft empty.
  Status Propose(const std::vector<DraftWork>& work);
  // The sequence's draft KV goes back to the pool (finished or preempted).
  void Release(const Sequence* s);

  const Model& model() const { return *model_; }
  int blocks_used() const { return n_blocks_ - static_cast<int>(free_blocks_.size()); }

 private:
  struct State {
    int slot = -1;
    std::vector<int32_t> blocks;
    std::vector<int32_t> fed;  // tokens whose K/V are in the draft cache, positions 0..
  };
  struct Active {
    Sequence* seq;
    State* st;
    int k;
    int n;  // tokens to feed: the sequence's (drafting: the draft continues after them) or upto
  };
  bool Prepare(const DraftWork& w, Active* a);  // truncate, slot, blocks; false: no room
  void Truncate(State* st, int n);
  Status CatchUp(std::vector<Active>& act);  // feeds tokens[fed..n); the last row gives draft 0
  Status Extend(std::vector<Active>& act);   // one more draft per sequence that wants one
  int32_t Argmax(size_t row) const;
  bool IsEog(int32_t id) const;

  std::unique_ptr<Model> model_;
  std::vector<int32_t> eog_ids_;  // sorted
  Options o_;
  int n_blocks_;
  int n_vocab_;
  Forward fwd_;
  PagedKvCache kv_;
  std::vector<int32_t> free_blocks_;
  std::vector<int> free_slots_;
  std::unordered_map<const Sequence*, State> states_;
  std::vector<BatchToken> batch_;
  std::vector<float> logits_;
};

}  // namespace engine_internal
}  // namespace stet
