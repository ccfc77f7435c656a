// The draft-model drafter: its KV pool bookkeeping (a slot and a block list
// per sequence, no sharing), the catch-up of the draft KV to each sequence's
// emitted tokens, and the greedy draft steps — every forward call batched
// across the drafting sequences. Speed only: what is drafted never reaches
// the output except through the target's own sampler (VerifyDraft).
#include "engine/draft_model.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "base/hash.h"
#include "engine/sampler.h"
#include "engine/sequence.h"

namespace stet {

namespace {

uint64_t HashLen(uint64_t h, size_t n) {
  const uint64_t len = n;
  return Fnv1a64(&len, sizeof len, h);
}
// The length, then the bytes: no two sequences of fields hash the same stream.
uint64_t HashBytes(uint64_t h, const void* p, size_t n) {
  h = HashLen(h, n);
  return n ? Fnv1a64(p, n, h) : h;
}
uint64_t HashStr(uint64_t h, const std::string& s) { return HashBytes(h, s.data(), s.size()); }
template <typename T>
uint64_t HashVec(uint64_t h, const std::vector<T>& v) {
  return HashBytes(h, v.data(), v.size() * sizeof(T));
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// The first field in which two vocabularies differ, in words ("" when none).
std::string FirstDifference(const VocabData& a, const VocabData& b) {
  if (a.model != b.model) return "tokenizer model " + Quote(a.model) + " vs " + Quote(b.model);
  if (a.pre != b.pre) return "pre-tokenizer " + Quote(a.pre) + " vs " + Quote(b.pre);
  if (a.tokens.size() != b.tokens.size())
    return "vocabulary size " + std::to_string(a.tokens.size()) + " vs " +
           std::to_string(b.tokens.size());
  for (size_t i = 0; i < a.tokens.size(); ++i) {
    if (a.tokens[i] != b.tokens[i])
      return "token " + std::to_string(i) + " " + Quote(a.tokens[i]) + " vs " + Quote(b.tokens[i]);
  }
  if (a.scores != b.scores) return "token scores";
  if (a.token_types != b.token_types) return "token types";
  if (a.merges.size() != b.merges.size())
    return "merges " + std::to_string(a.merges.size()) + " vs " + std::to_string(b.merges.size());
  if (a.merges != b.merges) return "merges";
  const int32_t ia[] = {a.bos_id, a.eos_id, a.unk_id, a.pad_id, a.eot_id, a.eom_id};
  const int32_t ib[] = {b.bos_id, b.eos_id, b.unk_id, b.pad_id, b.eot_id, b.eom_id};
  const char* names[] = {"bos", "eos", "unk", "pad", "eot", "eom"};
  for (int i = 0; i < 6; ++i) {
    if (ia[i] != ib[i])
      return std::string(names[i]) + " id " + std::to_string(ia[i]) + " vs " +
             std::to_string(ib[i]);
  }
  if (a.lstrip != b.lstrip || a.rstrip != b.rstrip) return "special-token strip flags";
  if (a.add_bos != b.add_bos || a.add_eos != b.add_eos ||
      a.add_space_prefix != b.add_space_prefix || a.ignore_merges != b.ignore_merges ||
      a.clean_spaces != b.clean_spaces)
    return "tokenizer flags (add_bos, add_eos, add_space_prefix, ignore_merges, clean_spaces)";
  return "";
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

uint64_t VocabDigest(const VocabData& v) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = HashStr(h, v.model);
  h = HashStr(h, v.pre);
  h = HashLen(h, v.tokens.size());
  for (const std::string& t : v.tokens) h = HashStr(h, t);
  h = HashVec(h, v.scores);
  h = HashVec(h, v.token_types);
  h = HashLen(h, v.merges.size());
  for (const auto& [l, r] : v.merges) h = HashStr(HashStr(h, l), r);
  h = HashVec(h, v.lstrip);
  h = HashVec(h, v.rstrip);
  const int32_t ids[] = {v.bos_id, v.eos_id, v.unk_id, v.pad_id, v.eot_id, v.eom_id};
  h = HashBytes(h, ids, sizeof ids);
  const uint8_t flags[] = {v.add_bos, v.add_eos, v.add_space_prefix, v.ignore_merges,
                           v.clean_spaces};
  return HashBytes(h, flags, sizeof flags);
}

Status CheckSameTokenizer(const VocabData& target, const std::string& target_path,
                          const VocabData& draft, const std::string& draft_path) {
  const uint64_t ht = VocabDigest(target), hd = VocabDigest(draft);
  if (ht == hd) return Status::Ok();
  std::string diff = FirstDifference(target, draft);
  if (diff.empty()) diff = "digests differ";
  return InvalidArgument("the draft model " + draft_path + " does not share the tokenizer of " +
                         target_path + " (tokenizer digests: target " + Hex(ht) + ", draft " +
                         Hex(hd) + "; first difference, target vs draft: " + diff +
                         "): a draft model must have the target's tokenizer");
}

namespace engine_internal {

DraftModel::DraftModel(std::unique_ptr<Model> model, std::vector<int32_t> eog_ids, ThreadPool* pool,
                       const Options& o)
    : model_(std::move(model)),
      eog_ids_(std::move(eog_ids)),
      o_(o),
      n_blocks_(o.n_blocks),
      n_vocab_(model_->hparams().n_vocab),
      fwd_(*model_, pool, o.isa, o.n_ctx, o.numerics),
      kv_(model_->hparams(), o.n_blocks, o.block_size, o.n_slots, DType::kF16) {
  std::sort(eog_ids_.begin(), eog_ids_.end());
  for (int b = o.n_blocks - 1; b >= 0; --b) free_blocks_.push_back(b);
  for (int s = o.n_slots - 1; s >= 0; --s) free_slots_.push_back(s);
}

void DraftModel::Release(const Sequence* s) {
  auto it = states_.find(s);
  if (it == states_.end()) return;
  Truncate(&it->second, 0);
  if (it->second.slot >= 0) {
    kv_.SetBlockTable(it->second.slot, {});
    free_slots_.push_back(it->second.slot);
  }
  states_.erase(it);
}

// Keeps the K/V of the first n fed tokens and the blocks they need.
void DraftModel::Truncate(State* st, int n) {
  st->fed.resize(std::min<size_t>(st->fed.size(), n));
  const size_t keep = static_cast<size_t>((n + o_.block_size - 1) / o_.block_size);
  if (st->blocks.size() <= keep) return;
  for (size_t b = keep; b < st->blocks.size(); ++b) free_blocks_.push_back(st->blocks[b]);
  st->blocks.resize(keep);
  kv_.SetBlockTable(st->slot, st->blocks);
}

bool DraftModel::Prepare(const DraftWork& w, Active* a) {
  Sequence* s = w.seq;
  State& st = states_[s];
  if (st.slot < 0) {
    if (free_slots_.empty()) {
      states_.erase(s);
      return false;
    }
    st.slot = free_slots_.back();
    free_slots_.pop_back();
  }
  const int n = w.k > 0 ? static_cast<int>(s->tokens.size()) : w.upto;
  // The longest prefix of the tokens the draft cache holds; when drafting,
  // less the last token: its row gives the first draft.
  const size_t common =
      std::mismatch(st.fed.begin(), st.fed.end(), s->tokens.begin(), s->tokens.end()).first -
      st.fed.begin();
  Truncate(&st, std::min<int>(static_cast<int>(common), w.k > 0 ? n - 1 : n));
  // Positions [0, n + k - 1): the tokens and all drafts but the last.
  const int have = static_cast<int>(st.blocks.size() + free_blocks_.size());
  const int k = std::min({w.k, o_.n_ctx - n + 1, have * o_.block_size - n + 1});
  if (w.k > 0 ? k < 1 : n > have * o_.block_size) {
    Release(s);
    return false;
  }
  const int want = (n + std::max(0, k - 1) + o_.block_size - 1) / o_.block_size;
  for (int b = static_cast<int>(st.blocks.size()); b < want; ++b) {
    st.blocks.push_back(free_blocks_.back());
    free_blocks_.pop_back();
  }
  kv_.SetBlockTable(st.slot, st.blocks);
  *a = {s, &st, k, n};
  return true;
}

Status DraftModel::Propose(const std::vector<DraftWork>& work) {
  std::vector<Active> act;
  for (const DraftWork& w : work) {
    Active a{};
    if ((w.k > 0 || w.upto > 0) && Prepare(w, &a)) act.push_back(a);
  }
  if (act.empty()) return Status::Ok();
  Status st = CatchUp(act);
  while (st.ok()) {
    bool more = false;
    for (const Active& a : act) {
      const auto& d = a.seq->draft;
      more |= static_cast<int>(d.size()) < a.k && !IsEog(d.back());
    }
    if (!more) break;
    st = Extend(act);
  }
  if (!st.ok()) {
    for (const Active& a : act) {
      a.seq->draft.clear();
      Release(a.seq);  // its cache may hold rows the failed call half wrote
    }
  }
  return st;
}

Status DraftModel::CatchUp(std::vector<Active>& act) {
  for (;;) {
    batch_.clear();
    std::vector<Active*> last;  // sequences whose last token is in this call, in batch order
    int budget = o_.max_batch_tokens;
    for (Active& a : act) {
      const int from = static_cast<int>(a.st->fed.size());
      const int c = std::min({a.n - from, o_.chunk_size, budget});
      for (int i = 0; i < c; ++i) {
        const int pos = from + i;
        const bool first_draft = a.k > 0 && pos == a.n - 1;
        batch_.push_back({a.seq->tokens[pos], pos, a.st->slot, first_draft});
        a.st->fed.push_back(a.seq->tokens[pos]);
      }
      if (c > 0 && a.k > 0 && from + c == a.n) last.push_back(&a);
      budget -= std::max(0, c);
    }
    if (batch_.empty()) return Status::Ok();
    logits_.clear();
    STET_RETURN_IF_ERROR(fwd_.Run(batch_, kv_, &logits_));
    for (size_t r = 0; r < last.size(); ++r) last[r]->seq->draft.push_back(Argmax(r));
  }
}

Status DraftModel::Extend(std::vector<Active>& act) {
  batch_.clear();
  std::vector<Active*> rows;
  for (Active& a : act) {
    std::vector<int32_t>& d = a.seq->draft;
    if (static_cast<int>(d.size()) >= a.k || IsEog(d.back())) continue;
    const int pos = static_cast<int>(a.st->fed.size());  // == n + drafts fed so far
    batch_.push_back({d.back(), pos, a.st->slot, true});
    a.st->fed.push_back(d.back());
    rows.push_back(&a);
  }
  logits_.clear();
  STET_RETURN_IF_ERROR(fwd_.Run(batch_, kv_, &logits_));
  for (size_t r = 0; r < rows.size(); ++r) rows[r]->seq->draft.push_back(Argmax(r));
  return Status::Ok();
}

// Greedy: the highest logit, the lowest id among equals.
int32_t DraftModel::Argmax(size_t row) const {
  return stet::Argmax(&logits_[row * n_vocab_], n_vocab_);  // the sampler's SIMD argmax
}

bool DraftModel::IsEog(int32_t id) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

}  // namespace engine_internal
}  // namespace stet
