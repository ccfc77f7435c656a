// The byte-level matcher and the trie walk behind the token mask. The walk
// visits trie entries in depth-first order, keeps one stack set per depth and
// skips a subtree as soon as its prefix leaves no stack alive; frames it
// creates are dropped when the walk backs out of the depth that made them.
#include "engine/grammar_matcher.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "base/check.h"

namespace stet {

TokenTrie::TokenTrie(const std::vector<std::string>& pieces)
    : n_vocab_(static_cast<int>(pieces.size())) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!pieces[i].empty() && pieces[i].size() <= kMaxTokenBytes) ids.push_back(i);
  }
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return pieces[a] < pieces[b] || (pieces[a] == pieces[b] && a < b);
  });
  std::vector<int32_t> open;  // entry index per depth on the current path
  const std::string* prev = nullptr;
  for (int32_t id : ids) {
    const std::string& s = pieces[id];
    size_t lcp = 0;
    if (prev) {
      while (lcp < prev->size() && lcp < s.size() && (*prev)[lcp] == s[lcp]) ++lcp;
    }
    while (open.size() > lcp) {
      entries_[open.back()].end = static_cast<int32_t>(entries_.size());
      open.pop_back();
    }
    for (size_t d = lcp; d < s.size(); ++d) {
      open.push_back(static_cast<int32_t>(entries_.size()));
      entries_.push_back({static_cast<uint8_t>(s[d]), static_cast<int32_t>(d + 1), 0, 0, 0});
    }
    // Sorted order puts a piece before its extensions and equal pieces together,
    // so a node's tokens are contiguous in token_ids_.
    Entry& e = entries_[open.back()];
    if (e.tok_end == e.tok_begin) e.tok_begin = static_cast<int32_t>(token_ids_.size());
    token_ids_.push_back(id);
    e.tok_end = static_cast<int32_t>(token_ids_.size());
    max_depth_ = std::max(max_depth_, static_cast<int>(s.size()));
    prev = &s;
  }
  for (int32_t i : open) entries_[i].end = static_cast<int32_t>(entries_.size());
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {}

Status GrammarMatcher::Init() {
  frames_.clear();
  stacks_.clear();
  accept_ = false;
  for (int32_t a : g_->alts[g_->root]) STET_RETURN_IF_ERROR(Expand(a, -1, &stacks_, &accept_));
  std::sort(stacks_.begin(), stacks_.end());
  stacks_.erase(std::unique(stacks_.begin(), stacks_.end()), stacks_.end());
  if (static_cast<int>(stacks_.size()) > g_->limits.max_stacks) {
    return InvalidArgument("grammar: more than " + std::to_string(g_->limits.max_stacks) +
                           " parse stacks at the start (too ambiguous)");
  }
  Compact();
  return Status::Ok();
}

Status GrammarMatcher::Expand(int32_t pos, int32_t parent, std::vector<Stack>* out, bool* accept) {
  const std::vector<int32_t>& el = g_->elems;
  work_.clear();
  work_.emplace_back(pos, parent);
  int steps = 0;
  while (!work_.empty()) {
    if (++steps > g_->limits.max_expand_steps) {
      return InvalidArgument("grammar: more than " + std::to_string(g_->limits.max_expand_steps) +
                             " expansion steps after one byte (too ambiguous)");
    }
    auto [p, par] = work_.back();
    work_.pop_back();
    const int32_t e = el[p];
    if (e >= 0) {
      out->emplace_back(p, par);
    } else if (e == Grammar::kEnd) {
      if (par < 0) {
        *accept = true;
      } else {
        work_.emplace_back(frames_[par].pos, frames_[par].parent);
      }
    } else {
      // A reference: its alternatives return to p + 1, or straight to the
      // caller's frame when p + 1 ends the alternative (so x* never deepens).
      int32_t ret = par;
      if (el[p + 1] != Grammar::kEnd) {
        ret = static_cast<int32_t>(frames_.size());
        frames_.push_back({p + 1, par});
      }
      const auto& alts = g_->alts[Grammar::RuleOf(e)];
      for (auto it = alts.rbegin(); it != alts.rend(); ++it) work_.emplace_back(*it, ret);
    }
  }
  expand_work_ += steps;
  return Status::Ok();
}

Status GrammarMatcher::Advance(const std::vector<Stack>& in, uint8_t b, std::vector<Stack>* out,
                               bool* accept) {
  out->clear();
  *accept = false;
  for (const Stack& s : in) {
    if (g_->sets[g_->elems[s.first]].Has(b)) {
      STET_RETURN_IF_ERROR(Expand(s.first + 1, s.second, out, accept));
    }
  }
  if (out->size() > 1) {
    std::sort(out->begin(), out->end());
    out->erase(std::unique(out->begin(), out->end()), out->end());
  }
  if (static_cast<int>(out->size()) > g_->limits.max_stacks) {
    return InvalidArgument("grammar: more than " + std::to_string(g_->limits.max_stacks) +
                           " simultaneous parse stacks (too ambiguous)");
  }
  return Status::Ok();
}

Result<bool> GrammarMatcher::Accept(std::string_view bytes) {
  if (bytes.empty()) return true;
  const size_t base = frames_.size();
  std::vector<Stack> cur = stacks_, next;
  bool acc = accept_;
  for (size_t i = 0; i < bytes.size(); ++i) {
    Status st = Advance(cur, static_cast<uint8_t>(bytes[i]), &next, &acc);
    if (!st.ok()) {
      frames_.resize(base);
      return st;
    }
    if (next.empty() && !(acc && i + 1 == bytes.size())) {
      frames_.resize(base);
      return false;
    }
    cur.swap(next);
  }
  stacks_.swap(cur);
  accept_ = acc;
  Compact();
  return true;
}

void GrammarMatcher::Compact() {
  std::vector<Frame> fresh;
  std::unordered_map<uint64_t, int32_t> interned;
  std::unordered_map<int32_t, int32_t> remap;  // old frame -> new
  std::vector<int32_t> chain;
  auto intern = [&](int32_t old) -> int32_t {
    if (old < 0) return -1;
    auto hit = remap.find(old);
    if (hit != remap.end()) return hit->second;
    chain.clear();
    for (int32_t f = old; f >= 0 && !remap.count(f); f = frames_[f].parent) chain.push_back(f);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Frame& fr = frames_[*it];
      const int32_t parent = fr.parent < 0 ? -1 : remap.at(fr.parent);
      const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(fr.pos)) << 32) |
                           static_cast<uint32_t>(parent);
      auto [slot, inserted] = interned.emplace(key, static_cast<int32_t>(fresh.size()));
      if (inserted) fresh.push_back({fr.pos, parent});
      remap.emplace(*it, slot->second);
    }
    return remap.at(old);
  };
  for (Stack& s : stacks_) s.second = intern(s.second);
  frames_.swap(fresh);
  std::sort(stacks_.begin(), stacks_.end());
  stacks_.erase(std::unique(stacks_.begin(), stacks_.end()), stacks_.end());
}

std::string GrammarMatcher::StateKey() const {
  std::string key(1, accept_ ? 'a' : 'o');
  auto put = [&](int32_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const Stack& s : stacks_) {
    put(s.first);
    for (int32_t f = s.second; f >= 0; f = frames_[f].parent) put(frames_[f].pos);
    put(-1);
  }
  return key;
}

Status GrammarMatcher::FillMask(const TokenTrie& trie, std::vector<uint8_t>* allowed) {
  if (cache_trie_ != &trie) {
    cache_.clear();
    cache_trie_ = &trie;
  }
  const int n = trie.n_vocab();
  std::string key = StateKey();
  ++tick_;
  for (CachedMask& c : cache_) {
    if (c.key != key) continue;
    c.used = tick_;
    allowed->resize(n);
    for (int i = 0; i < n; ++i) (*allowed)[i] = (c.bits[i >> 6] >> (i & 63)) & 1;
    return Status::Ok();
  }
  STET_RETURN_IF_ERROR(Walk(trie, allowed));
  CachedMask* slot;
  if (cache_.size() < kMaskCacheSize) {
    slot = &cache_.emplace_back();
  } else {
    slot = &*std::min_element(
        cache_.begin(), cache_.end(),
        [](const CachedMask& a, const CachedMask& b) { return a.used < b.used; });
  }
  slot->key = std::move(key);
  slot->used = tick_;
  slot->bits.assign((n + 63) / 64, 0);
  for (int i = 0; i < n; ++i)
    slot->bits[i >> 6] |= static_cast<uint64_t>((*allowed)[i] & 1) << (i & 63);
  return Status::Ok();
}

Status GrammarMatcher::Walk(const TokenTrie& trie, std::vector<uint8_t>* allowed) {
  allowed->assign(trie.n_vocab(), 0);
  const auto& entries = trie.entries();
  const auto& ids = trie.token_ids();
  const size_t depth = static_cast<size_t>(trie.max_depth()) + 1;
  if (levels_.size() < depth) levels_.resize(depth);
  marks_.assign(depth + 1, 0);
  levels_[0] = stacks_;
  const size_t base = frames_.size();
  marks_[1] = base;
  Status st = Status::Ok();
  // Work metered: every stack advanced and every rule expansion behind it, so
  // a grammar of long rule chains pays for each link (issue 25).
  const int64_t work0 = expand_work_;
  int64_t steps = 0;
  size_t i = 0;
  while (i < entries.size()) {
    const TokenTrie::Entry& e = entries[i];
    const size_t d = static_cast<size_t>(e.depth);
    steps += static_cast<int64_t>(levels_[d - 1].size());
    if (steps + (expand_work_ - work0) > g_->limits.max_mask_steps) {
      st = InvalidArgument("grammar: the token mask needs more than " +
                           std::to_string(g_->limits.max_mask_steps) +
                           " parse-stack steps and rule expansions (too ambiguous for this "
                           "vocabulary)");
      break;
    }
    frames_.resize(marks_[d]);  // frames of walks below a finished subtree
    bool acc = false;
    st = Advance(levels_[d - 1], e.byte, &levels_[d], &acc);
    if (!st.ok()) break;
    const bool alive = !levels_[d].empty();
    if (alive || acc) {
      for (int32_t t = e.tok_begin; t < e.tok_end; ++t) (*allowed)[ids[t]] = 1;
    }
    if (alive) {
      if (d + 1 <= depth) marks_[d + 1] = frames_.size();
      ++i;
    } else {
      i = static_cast<size_t>(e.end);
    }
  }
  frames_.resize(base);
  return st;
}

Status ProbeFirstMask(const std::shared_ptr<const Grammar>& g, const TokenTrie& trie) {
  GrammarProbe& p = *g->probe;
  std::lock_guard<std::mutex> lock(p.mu);  // a second asker waits for the first's verdict
  if (p.trie != &trie) {
    GrammarMatcher m(g);
    Status st = m.Init();
    std::vector<uint8_t> mask;
    if (st.ok()) st = m.FillMask(trie, &mask);
    p.status = st;
    p.trie = &trie;
  }
  return p.status;
}

}  // namespace stet
