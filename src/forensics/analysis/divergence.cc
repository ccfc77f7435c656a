// The reference is the most common output, so one odd run never makes every
// other run look divergent. Gaps are read from the top-k lists each run sent;
// a token outside a list only bounds the gap from below.
#include "forensics/analysis/divergence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace stet::forensics {

namespace {

std::optional<double> LookUp(const TokenLogprob& t, const std::string& token) {
  if (t.token == token) return t.logprob;
  for (const auto& [tok, lp] : t.top) {
    if (tok == token) return lp;
  }
  return std::nullopt;
}

std::string TraceKey(const Completion& c) {
  std::string key = c.text;
  key.push_back('\0');
  char buf[64];
  for (const TokenLogprob& t : c.tokens) {
    key += t.token;
    std::snprintf(buf, sizeof buf, "\x01%a", t.logprob);  // hex float: exact bits
    key += buf;
    for (const auto& [tok, lp] : t.top) {
      key += "\x02" + tok;
      std::snprintf(buf, sizeof buf, "\x03%a", lp);
      key += buf;
    }
  }
  return key;
}

}  // namespace

Fork FindFork(const Completion& reference, const Completion& variant) {
  Fork f;
  const std::string& a = reference.text;
  const std::string& b = variant.text;
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  f.byte_offset = (i == a.size() && i == b.size()) ? -1 : static_cast<int>(i);
  if (!reference.has_logprobs || !variant.has_logprobs) return f;
  const auto& ra = reference.tokens;
  const auto& rb = variant.tokens;
  size_t k = 0;
  while (k < ra.size() && k < rb.size() && ra[k].token == rb[k].token) ++k;
  if (k == ra.size() && k == rb.size()) return f;  // same tokens (texts may still differ)
  f.token_index = static_cast<int>(k);
  if (k < ra.size()) f.reference_token = ra[k].token;
  if (k < rb.size()) f.variant_token = rb[k].token;
  if (k < ra.size() && k < rb.size()) {
    const auto in_ref = LookUp(ra[k], rb[k].token);
    const auto in_var = LookUp(rb[k], ra[k].token);
    if (in_ref) f.gap_reference = ra[k].logprob - *in_ref;
    if (in_var) f.gap_variant = *in_var - rb[k].logprob;
    if (!in_ref && !ra[k].top.empty()) f.gap_bound = ra[k].logprob - ra[k].top.back().second;
    if (!in_ref && !in_var && !rb[k].top.empty()) {
      const double other = rb[k].top.back().second - rb[k].logprob;
      f.gap_bound = f.gap_bound ? std::max(*f.gap_bound, std::fabs(other)) : std::fabs(other);
    }
  }
  return f;
}

DivergenceReport AnalyzeRuns(const std::vector<Completion>& runs) {
  DivergenceReport r;
  r.runs = static_cast<int>(runs.size());
  r.has_logprobs = !runs.empty();
  std::map<std::string, int> by_text;  // text -> index in r.variants
  std::set<std::string> traces;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Completion& c = runs[i];
    if (!c.has_logprobs) r.has_logprobs = false;
    if (!c.system_fingerprint.empty()) r.fingerprints.insert(c.system_fingerprint);
    auto [it, added] = by_text.emplace(c.text, static_cast<int>(r.variants.size()));
    if (added) r.variants.push_back(Variant{c.text, 0, {}, std::nullopt});
    Variant& v = r.variants[it->second];
    ++v.count;
    v.runs.push_back(static_cast<int>(i));
    traces.insert(TraceKey(c));
  }
  r.distinct_logprob_traces = r.has_logprobs ? static_cast<int>(traces.size()) : 0;
  std::stable_sort(r.variants.begin(), r.variants.end(),
                   [](const Variant& x, const Variant& y) { return x.count > y.count; });
  if (!r.variants.empty()) {
    const Completion& ref = runs[r.variants[0].runs[0]];
    for (size_t v = 1; v < r.variants.size(); ++v) {
      r.variants[v].fork = FindFork(ref, runs[r.variants[v].runs[0]]);
    }
  }
  return r;
}

std::optional<Fork> DivergenceReport::EarliestFork() const {
  std::optional<Fork> best;
  for (const Variant& v : variants) {
    if (!v.fork) continue;
    const Fork& f = *v.fork;
    if (!best) {
      best = f;
      continue;
    }
    const bool tokens = f.token_index >= 0 && best->token_index >= 0;
    if (tokens ? f.token_index < best->token_index : f.byte_offset < best->byte_offset) best = f;
  }
  return best;
}

std::vector<int> DivergenceReport::ForkPositions() const {
  std::vector<int> out;
  for (const Variant& v : variants) {
    if (!v.fork) continue;
    const int pos = v.fork->token_index >= 0 ? v.fork->token_index : v.fork->byte_offset;
    for (int i = 0; i < v.count; ++i) out.push_back(pos);
  }
  return out;
}

std::string DescribeGap(const Fork& f) {
  char buf[96];
  if (f.gap_reference) {
    std::snprintf(buf, sizeof buf, "gap %.4g", *f.gap_reference);
  } else if (f.gap_variant) {
    std::snprintf(buf, sizeof buf, "gap %.4g", -*f.gap_variant);
  } else if (f.gap_bound) {
    std::snprintf(buf, sizeof buf, "gap >= %.4g (token outside top-k)", *f.gap_bound);
  } else if (f.token_index >= 0 && (f.reference_token.empty() || f.variant_token.empty())) {
    return "one output ended there";
  } else {
    return "gap unknown (no logprobs)";
  }
  return buf;
}

}  // namespace stet::forensics
