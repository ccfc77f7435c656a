// Matching a compiled Grammar byte by byte, and the token mask: which tokens
// of a vocabulary may come next. Invariant: the mask is a function of the
// matcher's state (the bytes accepted so far) and the vocabulary alone — never
// of other requests or of timing — so constrained decoding stays batch-invariant.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "engine/grammar.h"

namespace stet {

// A vocabulary's token byte strings as a trie laid out in depth-first order,
// so a walk that rejects a prefix skips its whole subtree in one jump.
class TokenTrie {
 public:
  // pieces[id]: the bytes token id stands for; an empty piece (control,
  // end-of-generation and unused tokens) is never offered by the mask, nor is
  // a piece longer than kMaxTokenBytes.
  static constexpr size_t kMaxTokenBytes = 1024;
  explicit TokenTrie(const std::vector<std::string>& pieces);

  struct Entry {
    uint8_t byte;
    int32_t depth;      // 1 for a first byte
    int32_t end;        // index just past this entry's subtree
    int32_t tok_begin;  // token_ids[tok_begin, tok_end): tokens spelled by the path to here
    int32_t tok_end;
  };
  const std::vector<Entry>& entries() const { return entries_; }
  const std::vector<int32_t>& token_ids() const { return token_ids_; }
  int n_vocab() const { return n_vocab_; }
  int max_depth() const { return max_depth_; }

 private:
  std::vector<Entry> entries_;
  std::vector<int32_t> token_ids_;
  int n_vocab_ = 0;
  int max_depth_ = 0;
};

// The state of one generation under a grammar: the set of parse stacks that
// the bytes so far leave open (llama.cpp's model, byte-level). Stacks share
// their return frames; after each accepted token the frames are interned so
// equal stacks are one.
class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> g);
  // The start state. InvalidArgument when expanding the root exceeds the
  // grammar's limits (the request is then refused).
  Status Init();

  // Advances over `bytes`. False (state unchanged) when the grammar rejects
  // them; an error status when matching exceeds the limits.
  Result<bool> Accept(std::string_view bytes);
  // The grammar may end here (end-of-generation allowed).
  bool CanEnd() const { return accept_; }
  // No byte can follow (only the end remains, if CanEnd()).
  bool Exhausted() const { return stacks_.empty(); }

  // allowed[id] = 1 when every byte of token id is accepted from this state,
  // else 0 (allowed is resized to trie.n_vocab()). Tokens outside the trie
  // (end-of-generation among them) are left 0: the caller decides those from CanEnd().
  // The last kMaskCacheSize masks are kept by state (JSON revisits the same
  // few states: inside a string, between items), so a repeat costs a copy; a
  // cache hit returns exactly what the walk would, so it changes no output.
  Status FillMask(const TokenTrie& trie, std::vector<uint8_t>* allowed);
  static constexpr size_t kMaskCacheSize = 16;

 private:
  using Stack = std::pair<int32_t, int32_t>;  // (element to match, return frame or -1)
  struct Frame {
    int32_t pos;
    int32_t parent;
  };
  // Expands (pos, parent) until every stack waits on a byte set; appends to `out`.
  Status Expand(int32_t pos, int32_t parent, std::vector<Stack>* out, bool* accept);
  // The stacks after one byte from `in`.
  Status Advance(const std::vector<Stack>& in, uint8_t b, std::vector<Stack>* out, bool* accept);
  void Compact();                // interns frames reachable from stacks_, drops the rest
  std::string StateKey() const;  // the stacks as position chains: equal iff the states are
  Status Walk(const TokenTrie& trie, std::vector<uint8_t>* allowed);

  std::shared_ptr<const Grammar> g_;
  std::vector<Frame> frames_;
  std::vector<Stack> stacks_;
  bool accept_ = false;
  std::vector<Stack> work_;
  int64_t expand_work_ = 0;                 // Expand's steps, ever: FillMask meters its share
  std::vector<std::vector<Stack>> levels_;  // FillMask's per-depth stack sets
  std::vector<size_t> marks_;
  struct CachedMask {
    std::string key;
    std::vector<uint64_t> bits;
    uint64_t used = 0;
  };
  std::vector<CachedMask> cache_;
  const TokenTrie* cache_trie_ = nullptr;
  uint64_t tick_ = 0;
};

// The start state's Init and first FillMask on `trie`, computed once per
// grammar and vocabulary (later calls, from any thread, return the first
// verdict): what validation charges a request for its grammar before it queues.
Status ProbeFirstMask(const std::shared_ptr<const Grammar>& g, const TokenTrie& trie);

}  // namespace stet
