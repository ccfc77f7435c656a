// Canary rounds and their analysis. A round's requests are sent one at a time
// (a canary measures the endpoint, not its queue) and recorded as they are
// answered. The analysis rebuilds runs from the records: per prompt, the
// greedy path's top-1 tokens and logprobs (the largest of top_logprobs, else
// the chosen token's), then tests each round as canary.h states.
#include "forensics/analysis/canary.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

#include "base/hash.h"
#include "base/random_id.h"
#include "base/rng.h"
#include "base/utc_time.h"
#include "forensics/client/answer_shaping.h"
#include "forensics/store/exchange.h"
#include "wire/answer.h"
#include "wire/json_read.h"
#include "wire/stream_fold.h"

namespace stet::forensics {

using wire::Str;

namespace {

using OJson = nlohmann::ordered_json;

struct Step {
  std::string token;
  double top1 = 0;
};

// The greedy path of one answer: per position, the top-1 token and its logprob
// (the largest of its alternatives, else the token's own).
std::vector<Step> PathOf(const OJson& resp) {
  std::vector<Step> out;
  const wire::Answer a = wire::ReadAnswer(resp, wire::ApiKind::kChat);
  if (a.choices.empty()) return out;
  for (const wire::AnswerToken& t : a.choices[0].tokens) {
    Step s{t.token, t.logprob.value_or(0.0)};
    bool first = true;
    for (const auto& [token, lp] : t.top) {
      const double v = lp.value_or(-1e300);
      if (first || v > s.top1) s = Step{token, v};
      first = false;
    }
    out.push_back(s);
  }
  return out;
}

struct Run {
  int index = 0, round = 0;
  std::string time;
  std::set<std::string> fingerprints, models;
  std::map<int, std::vector<Step>> paths;  // by prompt index
  std::map<int, std::string> prompt_ids;
  int failed = 0;
};

// How many leading steps of `path`, at most `limit`, carry the tokens of `ref`.
size_t AgreeingSteps(const std::vector<Step>& path, const std::vector<Step>& ref, size_t limit) {
  size_t t = 0;
  while (t < limit && t < path.size() && path[t].token == ref[t].token) ++t;
  return t;
}

// The greedy paths of prompt `pi` over some runs: the first run's path (null
// when no run answered it), how many leading steps all of them agree on, and
// whether every run answered it.
struct SharedPath {
  const std::vector<Step>* ref = nullptr;
  size_t len = SIZE_MAX;
  bool all = true;
};

SharedPath Shared(const std::vector<const Run*>& order, const std::vector<int>& runs, int pi) {
  SharedPath s;
  for (int i : runs) {
    auto it = order[i]->paths.find(pi);
    if (it == order[i]->paths.end()) {
      s.all = false;
      continue;
    }
    if (!s.ref) {
      s.ref = &it->second;
      s.len = s.ref->size();
    }
    s.len = std::min(s.len, AgreeingSteps(it->second, *s.ref, s.len));
  }
  return s;
}

int64_t Choose(int64_t n, int64_t k, int64_t cap) {
  int64_t c = 1;
  for (int64_t i = 1; i <= k; ++i) {
    c = c * (n - k + i) / i;
    if (c > cap) return cap + 1;
  }
  return c;
}

OJson CanaryBody(const CanaryOptions& o, const std::string& prompt) {
  OJson b = OJson::object();
  b["model"] = o.model;
  if (o.api == "chat") {
    b["messages"] = OJson::array({OJson{{"role", "user"}, {"content", prompt}}});
  } else {
    b["prompt"] = prompt;
  }
  b["max_tokens"] = o.max_tokens;
  b["temperature"] = 0;
  b["seed"] = 0;
  if (o.api == "chat") {
    b["logprobs"] = true;
    b["top_logprobs"] = o.top_logprobs;
  } else {
    b["logprobs"] = o.top_logprobs;
  }
  return b;
}

std::string BaseUrl(std::string u) {
  while (!u.empty() && u.back() == '/') u.pop_back();
  if (u.size() >= 3 && u.compare(u.size() - 3, 3, "/v1") == 0) u.resize(u.size() - 3);
  return u;
}

}  // namespace

std::string CanarySetId(const std::vector<DriftPrompt>& prompts, const CanaryOptions& o) {
  OJson j = {
      {"model", o.model}, {"api", o.api}, {"max_tokens", o.max_tokens}, {"top", o.top_logprobs}};
  OJson ps = OJson::array();
  for (const auto& p : prompts) ps.push_back(OJson{{"id", p.id}, {"prompt", p.prompt}});
  j["prompts"] = std::move(ps);
  const std::string c = CanonicalJson(j);
  return Sha256Hex(c.data(), c.size()).substr(0, 16);
}

Result<CanaryRoundResult> RunCanaryRound(ExchangeStore& store, const CanaryOptions& o,
                                         const std::vector<DriftPrompt>& prompts) {
  if (o.api != "chat" && o.api != "completions")
    return InvalidArgument("--api must be chat or completions");
  if (prompts.empty()) return InvalidArgument("the canary prompt set is empty");
  if (o.repeats < 1 || o.baseline_runs < 1)
    return InvalidArgument("--repeats and --baseline-runs must be >= 1");
  const std::string set = CanarySetId(prompts, o);
  int rounds = 0, runs = 0;
  ExchangeQuery q;
  q.kind = "canary";
  STET_RETURN_IF_ERROR(store.ForEach(q, [&](const ExchangeJson& r) -> Status {
    const OJson c = r.value("canary", OJson());
    if (c.is_object() && c.value("set", "") == set) {
      rounds = std::max(rounds, c.value("round", 0));
      runs = std::max(runs, c.value("run", -1) + 1);
    }
    return Status::Ok();
  }));
  CanaryRoundResult res;
  res.round = rounds + 1;
  res.runs = runs < o.baseline_runs ? std::max(o.repeats, o.baseline_runs - runs) : o.repeats;
  const std::string path = o.api == "chat" ? "/v1/chat/completions" : "/v1/completions";
  const std::string url = BaseUrl(o.endpoint) + path;
  HeaderList headers = {{"Content-Type", "application/json"}, {"Accept", "application/json"}};
  if (!o.api_key.empty()) headers.emplace_back("Authorization", "Bearer " + o.api_key);
  for (int k = 0; k < res.runs; ++k) {
    for (size_t i = 0; i < prompts.size(); ++i) {
      const OJson body = CanaryBody(o, prompts[i].prompt);
      const std::string received = NowIso8601();
      const auto t0 = std::chrono::steady_clock::now();
      UpstreamCall call;
      std::string text;
      const bool ok =
          call.Start("POST", url, headers, body.dump(), o.limits) && call.ReadAll(&text);
      OJson rec = OJson::object();
      rec["schema"] = kExchangeSchema;
      rec["id"] = "cnr-" + RandomHex(24);
      rec["kind"] = "canary";
      rec["endpoint"] = path;
      rec["method"] = "POST";
      rec["upstream"] = MaskUrlPassword(BaseUrl(o.endpoint));
      rec["received_at"] = received;
      rec["completed_at"] = NowIso8601();
      rec["latency_ms"] =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      rec["status"] = ok ? static_cast<int>(call.status()) : 502;
      rec["upstream_status"] = call.status() > 0 ? OJson(call.status()) : OJson();
      const OJson resp = ok ? OJson::parse(text, nullptr, false) : OJson();
      const bool good = ok && call.status() >= 200 && call.status() < 300 && resp.is_object();
      rec["outcome"] = good ? "ok" : ok ? "upstream_error" : "upstream_unreachable";
      rec["stream"] = false;
      rec["request"] = body;
      rec["response"] = resp.is_discarded() ? OJson() : resp;
      if (ok && resp.is_discarded()) rec["response_text"] = text;
      rec["model_requested"] = o.model;
      rec["model_answered"] = resp.is_object() && resp.contains("model") ? resp["model"] : OJson();
      rec["system_fingerprint"] = resp.is_object() && resp.contains("system_fingerprint")
                                      ? resp["system_fingerprint"]
                                      : OJson();
      rec["upstream_request_id"] =
          call.Header("x-request-id").empty() ? OJson() : OJson(call.Header("x-request-id"));
      rec["headers"] = KeptHeaders(call.headers());
      rec["error"] = ok ? OJson() : OJson(call.error());
      rec["canary"] = {{"set", set},
                       {"round", res.round},
                       {"run", runs + k},
                       {"prompt", prompts[i].id},
                       {"prompt_index", static_cast<int>(i)}};
      ExchangeRow row;
      FinishExchangeRow(std::move(rec), {}, &row);
      STET_RETURN_IF_ERROR(store.Insert(row));
      ++res.requests;
      if (!good) ++res.failed;
    }
  }
  return res;
}

double PermutationPValue(const std::vector<std::vector<double>>& values,
                         const std::vector<int>& current, int64_t max_permutations, uint64_t seed,
                         int64_t* permutations, bool* exact, double* statistic) {
  const int n = static_cast<int>(values.size());
  const int r = static_cast<int>(current.size());
  const size_t k = values.empty() ? 0 : values[0].size();
  std::vector<double> total(k, 0.0);
  for (const auto& row : values) {
    for (size_t j = 0; j < k; ++j) total[j] += row[j];
  }
  std::vector<double> sum(k);
  const auto stat = [&](const std::vector<int>& s) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int i : s) {
      for (size_t j = 0; j < k; ++j) sum[j] += values[i][j];
    }
    double t = 0;
    for (size_t j = 0; j < k; ++j) t += std::fabs(sum[j] / r - (total[j] - sum[j]) / (n - r));
    return k ? t / static_cast<double>(k) : 0.0;
  };
  const double obs = stat(current);
  *statistic = obs;
  const double tol = 1e-12 * std::max(1.0, std::fabs(obs));
  const int64_t subsets = Choose(n, r, max_permutations);
  int64_t hits = 0;
  if (subsets <= max_permutations) {
    *exact = true;
    *permutations = subsets;
    std::vector<int> s(r);
    for (int i = 0; i < r; ++i) s[i] = i;
    for (;;) {
      if (stat(s) >= obs - tol) ++hits;
      int i = r - 1;
      while (i >= 0 && s[i] == n - r + i) --i;
      if (i < 0) break;
      ++s[i];
      for (int j = i + 1; j < r; ++j) s[j] = s[j - 1] + 1;
    }
    return static_cast<double>(hits) / static_cast<double>(subsets);
  }
  *exact = false;
  *permutations = max_permutations;
  std::vector<int> idx(n);
  for (int64_t d = 0; d < max_permutations; ++d) {
    for (int i = 0; i < n; ++i) idx[i] = i;
    for (int i = 0; i < r;
         ++i) {  // partial Fisher-Yates with Philox draws keyed by (seed, draw, i)
      const auto bits = Philox4x32(
          {static_cast<uint32_t>(d), static_cast<uint32_t>(d >> 32), static_cast<uint32_t>(i), 0},
          {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
      const int j = i + static_cast<int>(
                            (static_cast<uint64_t>(bits[0]) * static_cast<uint64_t>(n - i)) >> 32);
      std::swap(idx[i], idx[j]);
    }
    if (stat(std::vector<int>(idx.begin(), idx.begin() + r)) >= obs - tol) ++hits;
  }
  return (1.0 + static_cast<double>(hits)) / (1.0 + static_cast<double>(max_permutations));
}

Result<CanaryAnalysis> AnalyzeCanary(const std::vector<ExchangeJson>& records,
                                     const CanaryTestOptions& o) {
  if (o.baseline_runs < 2)
    return InvalidArgument("--baseline-runs must be >= 2 (the test needs a spread)");
  if (!(o.alpha > 0 && o.alpha < 1)) return InvalidArgument("--alpha must be in (0, 1)");
  CanaryAnalysis a;
  a.alpha = o.alpha;
  a.baseline_runs = o.baseline_runs;
  a.set = o.set;
  if (a.set.empty()) {
    for (const auto& r : records) {
      const OJson c = r.value("canary", OJson());
      if (c.is_object()) a.set = c.value("set", "");
    }
  }
  std::map<int, Run> runs;
  for (const auto& r : records) {
    const OJson c = r.value("canary", OJson());
    if (Str(r, "kind") != "canary" || !c.is_object() || c.value("set", "") != a.set) continue;
    Run& run = runs[c.value("run", 0)];
    run.index = c.value("run", 0);
    run.round = c.value("round", 0);
    const std::string t = Str(r, "received_at");
    if (run.time.empty() || t < run.time) run.time = t;
    if (Str(r, "outcome") != "ok") {
      ++run.failed;
      continue;
    }
    run.fingerprints.insert(Str(r, "system_fingerprint").empty() ? "(none)"
                                                                 : Str(r, "system_fingerprint"));
    run.models.insert(Str(r, "model_answered").empty() ? "(none)" : Str(r, "model_answered"));
    const int pi = c.value("prompt_index", 0);
    run.paths[pi] = PathOf(r.value("response", OJson()));
    run.prompt_ids[pi] = c.value("prompt", std::to_string(pi));
  }
  if (runs.empty())
    return NotFound("no canary exchanges" + (a.set.empty() ? "" : " of set " + a.set) +
                    " in the store");
  std::vector<const Run*> order;
  for (const auto& [i, run] : runs) order.push_back(&run);
  a.total_runs = static_cast<int>(order.size());
  const int nb = std::min<int>(o.baseline_runs, a.total_runs);
  std::vector<int> baseline(nb);  // positions in `order`
  for (int i = 0; i < nb; ++i) baseline[i] = i;
  std::set<std::string> base_fps, base_models;
  std::set<int> prompts;
  for (int i = 0; i < nb; ++i) {
    base_fps.insert(order[i]->fingerprints.begin(), order[i]->fingerprints.end());
    base_models.insert(order[i]->models.begin(), order[i]->models.end());
  }
  for (const Run* run : order) {
    for (const auto& [pi, p] : run->paths) prompts.insert(pi);
  }
  std::map<int, std::vector<int>> by_round;  // round -> positions in `order`
  for (int i = 0; i < a.total_runs; ++i) by_round[order[i]->round].push_back(i);
  for (const auto& [round, members] : by_round) {
    CanaryCheck ch;
    ch.round = round;
    ch.runs = static_cast<int>(members.size());
    ch.time = order[members[0]]->time;
    std::set<std::string> fps, models;
    std::vector<int> current;
    for (int i : members) {
      fps.insert(order[i]->fingerprints.begin(), order[i]->fingerprints.end());
      models.insert(order[i]->models.begin(), order[i]->models.end());
      if (i >= nb) current.push_back(i);
      if (order[i]->failed > 0)
        ch.notes.push_back(std::to_string(order[i]->failed) + " request(s) failed in run " +
                           std::to_string(order[i]->index));
    }
    ch.fingerprints.assign(fps.begin(), fps.end());
    ch.models.assign(models.begin(), models.end());
    ch.baseline = current.empty();
    if (ch.baseline || nb < o.baseline_runs) {
      if (!ch.baseline) ch.notes.push_back("fewer runs than --baseline-runs: not tested");
      ch.baseline = true;
      a.rounds.push_back(std::move(ch));
      continue;
    }
    for (const auto& f : fps) {
      if (!base_fps.count(f)) ch.flags.push_back("fingerprint");
    }
    for (const auto& m : models) {
      if (!base_models.count(m)) ch.flags.push_back("model");
    }
    ch.flags.erase(std::unique(ch.flags.begin(), ch.flags.end()), ch.flags.end());
    // Greedy path: a position every baseline run agrees on, which most of this round's runs leave.
    for (int pi : prompts) {
      const SharedPath base = Shared(order, baseline, pi);
      if (!base.ref) continue;
      const std::vector<Step>* ref = base.ref;
      const size_t lb = base.len;
      int left = 0;
      size_t at = SIZE_MAX;
      std::string now_token;
      for (int i : current) {
        auto it = order[i]->paths.find(pi);
        if (it == order[i]->paths.end()) continue;
        const size_t t = AgreeingSteps(it->second, *ref, lb);
        if (t < lb) {
          ++left;
          if (t < at) {
            at = t;
            now_token = t < it->second.size() ? it->second[t].token : "(end)";
          }
        }
      }
      if (left * 2 > static_cast<int>(current.size())) {
        ch.flags.push_back("token");
        const auto& ids = order[current[0]]->prompt_ids;
        ch.notes.push_back("prompt " + (ids.count(pi) ? ids.at(pi) : std::to_string(pi)) +
                           ": top-1 token " + std::to_string(at) + " was " +
                           nlohmann::json((*ref)[at].token).dump() +
                           " in every baseline run, now " + nlohmann::json(now_token).dump());
        break;
      }
    }
    // Logprobs: positions where all pooled runs share the top-1 token.
    std::vector<int> pool = baseline;
    pool.insert(pool.end(), current.begin(), current.end());
    std::vector<std::vector<double>> values(pool.size());
    for (int pi : prompts) {
      const SharedPath shared = Shared(order, pool, pi);
      if (!shared.all || !shared.ref) continue;
      for (size_t t = 0; t < shared.len; ++t) {
        for (size_t j = 0; j < pool.size(); ++j)
          values[j].push_back(order[pool[j]]->paths.at(pi)[t].top1);
      }
    }
    ch.positions = values.empty() ? 0 : static_cast<int>(values[0].size());
    if (ch.positions > 0) {
      std::vector<int> cur_idx;
      for (size_t j = nb; j < pool.size(); ++j) cur_idx.push_back(static_cast<int>(j));
      ch.p_value =
          PermutationPValue(values, cur_idx, o.max_permutations, static_cast<uint64_t>(round),
                            &ch.permutations, &ch.exact, &ch.statistic);
      double m = 0;
      for (int j : cur_idx) {
        for (double v : values[j]) m += v;
      }
      ch.mean_top1 = m / (static_cast<double>(cur_idx.size()) * ch.positions);
      if (ch.p_value <= o.alpha) ch.flags.push_back("logprobs");
      const double min_p =
          ch.exact ? 1.0 / static_cast<double>(ch.permutations) : 1.0 / (1.0 + ch.permutations);
      if (min_p > o.alpha) {
        ch.notes.push_back(
            "with " + std::to_string(nb) + " baseline and " + std::to_string(cur_idx.size()) +
            " current runs the smallest p is " + std::to_string(min_p) +
            " > alpha: the logprob test cannot flag (more --baseline-runs or --repeats)");
      }
    } else {
      ch.notes.push_back(
          "no position where every run took the same top-1 token: logprobs not tested");
    }
    ++a.tested;
    if (!ch.flags.empty()) ++a.flagged;
    a.rounds.push_back(std::move(ch));
  }
  return a;
}

}  // namespace stet::forensics
