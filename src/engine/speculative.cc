// Prompt-lookup drafting and the acceptance rule of speculative decoding.
// Neither touches logits: drafting reads tokens only, and acceptance compares
// each draft token with the token the ordinary sampler emitted at its
// position, so speculation can change the speed of a run, never its bytes.
#include "engine/speculative.h"

#include <algorithm>

#include "base/enum_names.h"

namespace stet {

namespace {

constexpr EnumName<SpecMode> kSpecModeNames[] = {
    {SpecMode::kOff, "off"}, {SpecMode::kLookup, "lookup"}, {SpecMode::kDraft, "draft"}};

}  // namespace

Result<SpecMode> ParseSpecMode(const std::string& name) {
  if (auto m = ValueOf(kSpecModeNames, name)) return *m;
  return InvalidArgument("unknown speculation mode '" + name + "' (expected " +
                         NameList(kSpecModeNames) + ")");
}

const char* SpecModeName(SpecMode m) { return NameOf(kSpecModeNames, m, "off"); }

Status ValidateSpecOptions(const SpecOptions& o) {
  if (o.k < 1 || o.k > kMaxSpecK)
    return InvalidArgument("spec_k must be in [1, " + std::to_string(kMaxSpecK) + "], not " +
                           std::to_string(o.k));
  if (o.ngram_min < 1 || o.ngram_max < o.ngram_min || o.ngram_max > kMaxSpecNgram)
    return InvalidArgument("spec n-gram sizes must satisfy 1 <= min <= max <= " +
                           std::to_string(kMaxSpecNgram));
  if (o.mode == SpecMode::kDraft && o.draft_model.empty())
    return InvalidArgument("speculation mode draft needs a draft model (draft_model)");
  if (o.mode == SpecMode::kLookup && !o.draft_model.empty())
    return InvalidArgument("draft_model goes with speculation mode draft (or off), not lookup");
  return Status::Ok();
}

std::vector<int32_t> PromptLookupDraft(const std::vector<int32_t>& tokens, int k, int ngram_min,
                                       int ngram_max) {
  const int n = static_cast<int>(tokens.size());
  if (k <= 0) return {};
  for (int g = std::min(ngram_max, n - 1); g >= std::max(1, ngram_min); --g) {
    const int32_t* tail = tokens.data() + (n - g);
    int found = -1;
    // Latest first: the continuation of a copy in progress. Continuations grow
    // toward the start, so the first one with k tokens is the latest full one.
    for (int i = n - g - 1; i >= 0; --i) {
      if (!std::equal(tail, tail + g, tokens.data() + i)) continue;
      found = i;
      if (n - (i + g) >= k) break;
    }
    if (found < 0) continue;
    const int from = found + g;
    const int len = std::min(k, n - from);
    return std::vector<int32_t>(tokens.begin() + from, tokens.begin() + from + len);
  }
  return {};
}

Verdict VerifyDraft(const std::vector<int32_t>& draft,
                    const std::function<Emitted(int row)>& emit) {
  Verdict v;
  const int k = static_cast<int>(draft.size());
  for (int j = 0; j <= k; ++j) {
    const Emitted e = emit(j);
    ++v.emitted;
    const bool match = j < k && e.id == draft[j];
    if (match) ++v.accepted;
    if (e.ended) {
      v.ended = true;
      break;
    }
    if (!match) break;  // the correction (or, after row k, the bonus token)
  }
  return v;
}

int DraftShare(int decoding, int speculating) {
  if (speculating <= 0) return 0;
  return std::max(0, kSpecRowBudget - decoding) / speculating;
}

int NextSpecK(int k_cur, int k_max, int drafted, int accepted) {
  if (drafted <= 0) return k_cur;
  if (accepted >= drafted) return std::min(k_max, k_cur + 2);
  return std::max(1, std::min(k_max, accepted + 1));
}

}  // namespace stet
