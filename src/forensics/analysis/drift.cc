// Distances use only the tokens both top-k lists contain, renormalized on that
// shared support: the endpoints send top-k, not full distributions, so mass
// outside the lists is unknown. A position whose lists share no token counts
// as TV 1 and infinite KL ("disjoint").
#include "forensics/analysis/drift.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "base/progress.h"
#include "base/text_lines.h"
#include "forensics/analysis/probe.h"
#include "forensics/analysis/stats.h"
#include "forensics/analysis/svg.h"
#include "forensics/client/openai.h"

namespace stet::forensics {

using nlohmann::json;

Result<std::vector<DriftPrompt>> LoadDriftPrompts(const std::string& path) {
  STET_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  const size_t first = text.find_first_not_of(" \t\r\n");
  const bool jsonl = first != std::string::npos && text[first] == '{';
  std::vector<DriftPrompt> out;
  std::set<std::string> ids;
  STET_RETURN_IF_ERROR(ForEachLine(text, [&](const std::string& line, int lineno) -> Status {
    const std::string where = path + ":" + std::to_string(lineno) + ": ";
    DriftPrompt p;
    if (jsonl) {
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("prompt") || !j["prompt"].is_string()) {
        return InvalidArgument(where + "expected a JSON object with a string \"prompt\"");
      }
      p.prompt = j["prompt"].get<std::string>();
      if (j.contains("id") && j["id"].is_string())
        p.id = j["id"].get<std::string>();
      else if (j.contains("id") && j["id"].is_number_integer())
        p.id = std::to_string(j["id"].get<int64_t>());
      else
        p.id = std::to_string(lineno);
    } else {
      p.id = std::to_string(lineno);
      p.prompt = line;
    }
    if (!ids.insert(p.id).second) return InvalidArgument(where + "duplicate id '" + p.id + "'");
    out.push_back(std::move(p));
    return Status::Ok();
  }));
  if (out.empty()) return InvalidArgument("'" + path + "' holds no prompts");
  return out;
}

Result<json> CaptureDrift(const DriftCaptureOptions& o, const std::vector<DriftPrompt>& prompts) {
  if (o.top_k < 1 || o.top_k > 20) return InvalidArgument("--top-k must be in [1, 20]");
  if (o.max_tokens < 1) return InvalidArgument("--max-tokens must be at least 1");
  HttpOptions http;
  http.api_key = o.api_key;
  http.timeout_ms = o.timeout_ms;
  std::vector<Result<Completion>> got(prompts.size(), Result<Completion>(Internal("not run")));
  {
    ProgressBar bar("drift " + o.endpoint, static_cast<int64_t>(prompts.size()));
    std::mutex mu;
    int64_t finished = 0;
    WorkerPool pool(std::max(1, o.concurrency), http);
    for (size_t i = 0; i < prompts.size(); ++i) {
      pool.Submit([&, i](HttpClient& client) {
        CompletionRequest req;
        req.model = o.model;
        req.prompt = prompts[i].prompt;
        req.max_tokens = o.max_tokens;
        req.temperature = 0;
        req.seed = 0;
        req.top_logprobs = o.top_k;
        auto r = Complete(client, o.endpoint, req);
        std::lock_guard<std::mutex> lock(mu);
        got[i] = std::move(r);
        bar.Update(++finished);
      });
    }
    pool.Wait();
  }
  json doc;
  doc["tool"] = "stet drift";
  doc["schema"] = 1;
  doc["endpoint"] = o.endpoint;
  doc["model"] = o.model;
  doc["timestamp"] = UtcTimestamp();
  doc["top_k"] = o.top_k;
  doc["max_tokens"] = o.max_tokens;
  std::set<std::string> fps;
  json jp = json::array();
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (!got[i].ok())
      return Status(got[i].status().code(),
                    "prompt '" + prompts[i].id + "': " + got[i].status().message());
    const Completion& c = *got[i];
    if (!c.has_logprobs) {
      return Unimplemented("the endpoint sent no logprobs for prompt '" + prompts[i].id +
                           "'; drift needs a /v1/completions endpoint that honours \"logprobs\"");
    }
    json p;
    p["id"] = prompts[i].id;
    p["prompt"] = prompts[i].prompt;
    p["text"] = c.text;
    p["fingerprint"] = c.system_fingerprint;
    if (!c.system_fingerprint.empty()) fps.insert(c.system_fingerprint);
    json pos = json::array();
    for (const TokenLogprob& t : c.tokens) {
      json top = json::array();
      for (const auto& [tok, lp] : t.top) top.push_back(json::array({tok, lp}));
      pos.push_back({{"token", t.token}, {"logprob", t.logprob}, {"top", top}});
    }
    p["positions"] = pos;
    jp.push_back(p);
  }
  doc["fingerprints"] = std::vector<std::string>(fps.begin(), fps.end());
  doc["prompts"] = jp;
  return doc;
}

Status ValidateCapture(const json& doc, const std::string& name) {
  auto bad = [&](const std::string& what) {
    return InvalidArgument(name + " is not a stet drift capture: " + what);
  };
  if (!doc.is_object() || doc.value("tool", "") != "stet drift")
    return bad("\"tool\" is not \"stet drift\"");
  if (!doc.contains("prompts") || !doc["prompts"].is_array()) return bad("no \"prompts\" array");
  for (const json& p : doc["prompts"]) {
    if (!p.is_object() || !p.contains("id") || !p["id"].is_string() || !p.contains("positions") ||
        !p["positions"].is_array()) {
      return bad("a prompt lacks a string \"id\" or a \"positions\" array");
    }
    for (const json& pos : p["positions"]) {
      if (!pos.is_object() || !pos.contains("token") || !pos["token"].is_string() ||
          !pos.contains("top") || !pos["top"].is_array()) {
        return bad("prompt '" + p["id"].get<std::string>() + "' has a malformed position");
      }
      for (const json& e : pos["top"]) {
        if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number()) {
          return bad("prompt '" + p["id"].get<std::string>() + "' has a malformed top-k entry");
        }
      }
    }
  }
  return Status::Ok();
}

namespace {

struct PositionCompare {
  bool top1_agree = false;
  bool disjoint = false;
  double tv = 0;
  double kl = 0;
};

PositionCompare ComparePosition(const json& a, const json& b) {
  std::map<std::string, double> ma, mb;
  for (const json& e : a["top"]) ma.emplace(e[0].get<std::string>(), e[1].get<double>());
  for (const json& e : b["top"]) mb.emplace(e[0].get<std::string>(), e[1].get<double>());
  PositionCompare r;
  // The argmax of each list (ties to the smaller token, as the capture sorts them).
  auto argmax = [](const std::map<std::string, double>& m, const json& pos) {
    if (m.empty()) return pos["token"].get<std::string>();
    auto best = m.begin();
    for (auto i = m.begin(); i != m.end(); ++i) {
      if (i->second > best->second) best = i;
    }
    return best->first;
  };
  r.top1_agree = argmax(ma, a) == argmax(mb, b);
  std::vector<double> la, lb;
  for (const auto& [tok, lp] : ma) {
    auto it = mb.find(tok);
    if (it == mb.end()) continue;
    la.push_back(lp);
    lb.push_back(it->second);
  }
  if (la.empty()) {
    r.disjoint = true;
    r.tv = 1;
    r.kl = std::numeric_limits<double>::infinity();
    return r;
  }
  const auto p = RenormalizedFromLogprobs(la), q = RenormalizedFromLogprobs(lb);
  r.tv = TotalVariation(p, q);
  r.kl = KlDivergence(p, q);
  return r;
}

json FiniteOrNull(double v) { return std::isfinite(v) ? json(v) : json(); }

}  // namespace

Result<json> CompareDrift(const json& baseline, const json& current, double threshold) {
  STET_RETURN_IF_ERROR(ValidateCapture(baseline, "the baseline"));
  STET_RETURN_IF_ERROR(ValidateCapture(current, "the current capture"));
  std::map<std::string, const json*> base_by_id;
  for (const json& p : baseline["prompts"]) base_by_id[p["id"].get<std::string>()] = &p;
  json notes = json::array();
  json rows = json::array();
  int64_t positions = 0, agree = 0, disjoint = 0, diverged = 0, kl_n = 0;
  double tv_sum = 0, tv_max = 0, kl_sum = 0, kl_max = 0;
  int earliest = -1;
  int matched = 0;
  for (const json& cp : current["prompts"]) {
    const std::string id = cp["id"].get<std::string>();
    auto it = base_by_id.find(id);
    if (it == base_by_id.end()) {
      notes.push_back("prompt '" + id + "' is not in the baseline");
      continue;
    }
    const json& bp = *it->second;
    if (bp.value("prompt", "") != cp.value("prompt", "")) {
      return InvalidArgument("prompt '" + id +
                             "' has different text in the baseline: not the same prompt set");
    }
    ++matched;
    const json& pa = bp["positions"];
    const json& pb = cp["positions"];
    const size_t n = std::min(pa.size(), pb.size());
    int first_div = -1;
    int64_t pos_n = 0, pos_agree = 0;
    double p_tv_sum = 0, p_tv_max = 0, p_kl_max = 0;
    for (size_t k = 0; k < n; ++k) {
      const PositionCompare pc = ComparePosition(pa[k], pb[k]);
      ++pos_n;
      pos_agree += pc.top1_agree;
      disjoint += pc.disjoint;
      p_tv_sum += pc.tv;
      p_tv_max = std::max(p_tv_max, pc.tv);
      p_kl_max = std::max(p_kl_max, pc.kl);
      if (std::isfinite(pc.kl)) {
        kl_sum += pc.kl;
        ++kl_n;
      }
      if (pa[k]["token"] != pb[k]["token"]) {
        first_div = static_cast<int>(k);
        break;  // the contexts differ from here on
      }
    }
    if (first_div < 0 && pa.size() != pb.size())
      first_div = static_cast<int>(n);  // one path stopped early
    positions += pos_n;
    agree += pos_agree;
    tv_sum += p_tv_sum;
    tv_max = std::max(tv_max, p_tv_max);
    kl_max = std::max(kl_max, p_kl_max);
    if (first_div >= 0) {
      ++diverged;
      earliest = earliest < 0 ? first_div : std::min(earliest, first_div);
    }
    json row;
    row["id"] = id;
    row["positions_compared"] = pos_n;
    row["top1_agreement"] = pos_n ? json(static_cast<double>(pos_agree) / pos_n) : json();
    row["mean_tv"] = pos_n ? json(p_tv_sum / pos_n) : json();
    row["max_tv"] = p_tv_max;
    row["max_kl"] = FiniteOrNull(p_kl_max);
    row["first_divergence"] = first_div >= 0 ? json(first_div) : json();
    if (first_div >= 0 && static_cast<size_t>(first_div) < n) {
      row["tokens_at_divergence"] = {pa[first_div]["token"], pb[first_div]["token"]};
    }
    rows.push_back(row);
  }
  if (matched == 0)
    return InvalidArgument("the baseline and the current capture share no prompt ids");
  for (const auto& [id, p] : base_by_id) {
    bool found = false;
    for (const json& cp : current["prompts"]) found = found || cp["id"] == id;
    if (!found) notes.push_back("baseline prompt '" + id + "' was not captured now");
  }
  if (baseline.value("top_k", 0) != current.value("top_k", 0)) {
    notes.push_back("top_k differs (baseline " + baseline.value("top_k", json()).dump() + ", now " +
                    current.value("top_k", json()).dump() +
                    "): distances use the shared tokens only");
  }
  if (baseline.value("max_tokens", 0) != current.value("max_tokens", 0)) {
    notes.push_back("max_tokens differs: positions compared up to the shorter capture");
  }
  if (baseline.value("fingerprints", json::array()) !=
      current.value("fingerprints", json::array())) {
    notes.push_back("system_fingerprint differs: baseline " +
                    baseline.value("fingerprints", json::array()).dump() + ", now " +
                    current.value("fingerprints", json::array()).dump());
  }
  json out;
  out["tool"] = "stet drift compare";
  out["baseline"] = {{"endpoint", baseline.value("endpoint", "")},
                     {"model", baseline.value("model", "")},
                     {"timestamp", baseline.value("timestamp", "")},
                     {"fingerprints", baseline.value("fingerprints", json::array())}};
  out["current"] = {{"endpoint", current.value("endpoint", "")},
                    {"model", current.value("model", "")},
                    {"timestamp", current.value("timestamp", "")},
                    {"fingerprints", current.value("fingerprints", json::array())}};
  const double top1 = positions ? static_cast<double>(agree) / positions : 1.0;
  const double mean_tv = positions ? tv_sum / positions : 0.0;
  const double drift = std::max(1.0 - top1, mean_tv);
  out["prompts_compared"] = matched;
  out["positions_compared"] = positions;
  out["top1_agreement"] = top1;
  out["mean_tv"] = mean_tv;
  out["max_tv"] = tv_max;
  out["mean_kl"] = kl_n ? json(kl_sum / kl_n) : json();
  out["max_kl"] = FiniteOrNull(kl_max);
  out["disjoint_positions"] = disjoint;
  out["prompts_diverged"] = diverged;
  out["earliest_divergence"] = earliest >= 0 ? json(earliest) : json();
  out["drift"] = drift;
  out["threshold"] = threshold;
  out["exceeded"] = drift > threshold;
  out["prompts"] = rows;
  out["notes"] = notes;
  return out;
}

std::string DriftSummaryText(const json& c) {
  auto num = [](const json& v, int sig = 4) {
    return v.is_number() ? FormatDouble(v.get<double>(), sig) : std::string("-");
  };
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-24s %9s %9s %9s %9s %9s  %s\n", "prompt", "positions", "top1",
                "mean TV", "max TV", "max KL", "first divergence");
  s += buf;
  for (const json& r : c["prompts"]) {
    std::string id = r["id"].get<std::string>();
    if (id.size() > 24) id = id.substr(0, 23) + "~";
    std::string div = r["first_divergence"].is_number()
                          ? "token " + std::to_string(r["first_divergence"].get<int>())
                          : "-";
    if (r.contains("tokens_at_divergence")) {
      div += " (" + r["tokens_at_divergence"][0].dump() + " vs " +
             r["tokens_at_divergence"][1].dump() + ")";
    }
    std::snprintf(buf, sizeof buf, "%-24s %9lld %9s %9s %9s %9s  %s\n", id.c_str(),
                  static_cast<long long>(r["positions_compared"].get<int64_t>()),
                  num(r["top1_agreement"]).c_str(), num(r["mean_tv"]).c_str(),
                  num(r["max_tv"]).c_str(),
                  r["max_kl"].is_null() ? "inf" : num(r["max_kl"]).c_str(), div.c_str());
    s += buf;
  }
  s += "positions compared: " + std::to_string(c["positions_compared"].get<int64_t>()) + " over " +
       std::to_string(c["prompts_compared"].get<int>()) + " prompts; top-1 agreement " +
       num(c["top1_agreement"]) + "; mean TV " + num(c["mean_tv"]) + " (max " + num(c["max_tv"]) +
       "); mean KL " + num(c["mean_kl"]) + "; disjoint positions " +
       std::to_string(c["disjoint_positions"].get<int64_t>()) + "; prompts diverged " +
       std::to_string(c["prompts_diverged"].get<int64_t>()) +
       (c["earliest_divergence"].is_number()
            ? " (earliest at token " + std::to_string(c["earliest_divergence"].get<int>()) + ")"
            : "") +
       "\n";
  s += std::string(c["exceeded"].get<bool>() ? "DRIFT: " : "ok: ") + "drift " + num(c["drift"]) +
       (c["exceeded"].get<bool>() ? " > " : " <= ") + "threshold " + num(c["threshold"]) +
       " (drift = max(1 - top-1 agreement, mean TV))\n";
  for (const json& n : c["notes"]) s += "note: " + n.get<std::string>() + "\n";
  return s;
}

}  // namespace stet::forensics
