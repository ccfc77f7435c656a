// Exchange helpers. Redaction walks the path over the record with wildcards;
// a path that reaches nothing redacts nothing (paths are configuration, not
// assertions). The snapshot is computed after redaction, so a redacted system
// prompt is never stored, even in the snapshots table.
#include "forensics/store/exchange.h"

#include "base/hash.h"
#include "base/rng.h"

namespace stet::forensics {

using wire::Str;

namespace {

constexpr uint32_t kSampleStream = 0x53544c50;  // "STLP": the logprob-sample draws

void RedactAt(WireJson& node, const std::vector<std::string>& steps, size_t i, int* count) {
  if (i == steps.size()) {
    node = "[redacted]";
    ++*count;
    return;
  }
  const std::string& s = steps[i];
  if (s == "[*]") {
    if (node.is_array()) {
      for (auto& e : node) RedactAt(e, steps, i + 1, count);
    }
    return;
  }
  if (s.size() > 2 && s.front() == '[') {
    const size_t k = std::stoul(s.substr(1, s.size() - 2));
    if (node.is_array() && k < node.size()) RedactAt(node[k], steps, i + 1, count);
    return;
  }
  if (node.is_object() && node.contains(s)) RedactAt(node[s], steps, i + 1, count);
}

}  // namespace

SampleDraw DrawLogprobSample(double rate, uint64_t seed, uint64_t index) {
  const auto r = Philox4x32(
      {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), kSampleStream, 0},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  const uint64_t bits = (static_cast<uint64_t>(r[0]) << 21) ^ (r[1] >> 11);  // 53 bits
  SampleDraw d;
  d.index = index;
  d.u = static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
  d.sampled = d.u < rate;
  return d;
}

WireJson InjectLogprobs(ApiKind kind, WireJson& body, int top_logprobs) {
  if (!body.is_object()) return nullptr;
  if (kind == ApiKind::kChat) {
    auto lp = body.find("logprobs");
    if (lp != body.end() && !lp->is_null() && *lp != false) return nullptr;
    WireJson added = {{"logprobs", true}};
    body["logprobs"] = true;
    if (!body.contains("top_logprobs") || body["top_logprobs"].is_null()) {
      body["top_logprobs"] = top_logprobs;
      added["top_logprobs"] = top_logprobs;
    }
    return added;
  }
  if (kind == ApiKind::kCompletions) {
    auto lp = body.find("logprobs");
    if (lp != body.end() && !lp->is_null()) return nullptr;
    body["logprobs"] = top_logprobs;
    return WireJson{{"logprobs", top_logprobs}};
  }
  return nullptr;
}

Result<RedactPath> ParseRedactPath(const std::string& text) {
  RedactPath p;
  p.text = text;
  std::string s = text;
  if (s.rfind("$.", 0) == 0) s = "request." + s.substr(2);
  const auto bad = [&](const std::string& why) {
    return InvalidArgument("--redact '" + text + "': " + why +
                           " (use dotted keys with [*] or [N], e.g. request.messages[*].content)");
  };
  size_t i = 0;
  std::string key;
  const auto flush = [&] {
    if (!key.empty()) p.steps.push_back(key);
    key.clear();
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '.') {
      if (key.empty() && (p.steps.empty() || p.steps.back().front() != '['))
        return bad("empty key");
      flush();
      ++i;
    } else if (c == '[') {
      flush();
      const size_t close = s.find(']', i);
      if (close == std::string::npos) return bad("unclosed [");
      const std::string inner = s.substr(i + 1, close - i - 1);
      if (inner != "*" &&
          (inner.empty() || inner.find_first_not_of("0123456789") != std::string::npos ||
           inner.size() > 9)) {
        return bad("an array step is [*] or [N]");
      }
      p.steps.push_back("[" + inner + "]");
      i = close + 1;
    } else {
      key += c;
      ++i;
    }
  }
  flush();
  if (p.steps.empty()) return bad("empty path");
  if (p.steps[0].front() == '[') return bad("a path starts with a key");
  for (const std::string& k :
       {std::string("schema"), std::string("id"), std::string("kind"), std::string("endpoint"),
        std::string("received_at"), std::string("status")}) {
    if (p.steps.size() == 1 && p.steps[0] == k)
      return bad("'" + k + "' is required in every record");
  }
  return p;
}

int Redact(WireJson& record, const RedactPath& path) {
  int count = 0;
  RedactAt(record, path.steps, 0, &count);
  return count;
}

WireJson KeptHeaders(const HeaderList& headers) {
  WireJson out = WireJson::object();
  for (const auto& [k, v] : headers) {
    std::string n = k;
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool keep = n == "x-request-id" || n == "request-id" || n == "openai-processing-ms" ||
                      n == "openai-version" || n == "openai-model" || n == "retry-after" ||
                      n == "date" || n.rfind("x-ratelimit-", 0) == 0 ||
                      n.rfind("ratelimit", 0) == 0 || n.rfind("anthropic-ratelimit-", 0) == 0;
    if (keep) out[n] = v;
  }
  return out;
}

WireJson ClientContext(const std::string& header_value, const WireJson& request) {
  WireJson ctx = WireJson::object();
  if (!header_value.empty()) {
    WireJson h = WireJson::parse(header_value, nullptr, false);
    ctx["header"] = h.is_discarded() ? WireJson(header_value) : h;
  }
  if (request.is_object() && request.contains("metadata") && !request["metadata"].is_null()) {
    ctx["metadata"] = request["metadata"];
  }
  return ctx.empty() ? WireJson() : ctx;
}

void FinishExchangeRow(WireJson record, const std::vector<RedactPath>& redact, ExchangeRow* row) {
  for (const RedactPath& p : redact) Redact(record, p);
  const WireJson snap = AnswerShapingSnapshot(record.value("request", WireJson()));
  row->snapshot_sha256.clear();
  row->snapshot_json.clear();
  if (!snap.is_null()) {
    row->snapshot_json = CanonicalJson(snap);
    row->snapshot_sha256 = Sha256Hex(row->snapshot_json.data(), row->snapshot_json.size());
    record["snapshot"] = row->snapshot_sha256;
  } else {
    record["snapshot"] = nullptr;
  }
  row->record = std::move(record);
}

}  // namespace stet::forensics
