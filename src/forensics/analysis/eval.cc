// Errored requests (timeouts, HTTP errors) are recorded but never scored: a
// server hiccup is not a model failure. Intervals are computed only from the
// recorded per-run results, so Summarize() on a saved results.json reproduces
// the report exactly (the bootstrap is seeded).
#include "forensics/analysis/eval.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "base/enum_names.h"
#include "base/hash.h"
#include "base/json_text.h"
#include "base/progress.h"
#include "base/text_lines.h"
#include "forensics/analysis/probe.h"
#include "forensics/analysis/stats.h"
#include "forensics/analysis/svg.h"

namespace stet::forensics {

using nlohmann::json;

namespace {

constexpr EnumName<Metric> kMetricNames[] = {{Metric::kExact, "exact"},
                                             {Metric::kContains, "contains"},
                                             {Metric::kRegex, "regex"},
                                             {Metric::kJson, "json"}};
constexpr EnumName<SeedPolicy> kSeedPolicyNames[] = {{SeedPolicy::kFixed, "fixed"},
                                                     {SeedPolicy::kPerRepeat, "per-repeat"},
                                                     {SeedPolicy::kNone, "none"}};

}  // namespace

Result<Metric> ParseMetric(const std::string& name) {
  if (auto m = ValueOf(kMetricNames, name)) return *m;
  return InvalidArgument("metric must be " + NameList(kMetricNames) + ", not '" + name + "'");
}

const char* MetricName(Metric m) { return NameOf(kMetricNames, m, "?"); }

Result<SeedPolicy> ParseSeedPolicy(const std::string& name) {
  if (auto p = ValueOf(kSeedPolicyNames, name)) return *p;
  return InvalidArgument("--seed-policy must be " + NameList(kSeedPolicyNames) + ", not '" + name +
                         "'");
}

const char* SeedPolicyName(SeedPolicy p) { return NameOf(kSeedPolicyNames, p, "?"); }

namespace {

// Compiles `pattern` (UTF-8); returns nullptr and sets *error when it does not compile.
pcre2_code* CompileRegex(const std::string& pattern, std::string* error) {
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                 PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &offset, nullptr);
  if (!re && error) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(code, buf, sizeof buf);
    *error = std::string(reinterpret_cast<char*>(buf)) + " at offset " + std::to_string(offset);
  }
  return re;
}

bool RegexSearch(const std::string& pattern, const std::string& text) {
  pcre2_code* re = CompileRegex(pattern, nullptr);
  if (!re) return false;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
  const int rc =
      pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0, md, nullptr);
  pcre2_match_data_free(md);
  pcre2_code_free(re);
  return rc >= 0;
}

std::string ExpectedText(const json& e) { return e.is_string() ? e.get<std::string>() : e.dump(); }

}  // namespace

std::optional<json> ExtractJson(const std::string& text) {
  const std::string t = Trim(text);
  json j = json::parse(t, nullptr, false);
  if (!j.is_discarded()) return j;
  const size_t fence = t.find("```");
  if (fence != std::string::npos) {
    size_t start = t.find('\n', fence);
    const size_t end = start == std::string::npos ? std::string::npos : t.find("```", start);
    if (end != std::string::npos) {
      j = json::parse(t.substr(start + 1, end - start - 1), nullptr, false);
      if (!j.is_discarded()) return j;
    }
  }
  // The first balanced {...} or [...] (string-aware) that parses.
  for (size_t b = 0; b < t.size(); ++b) {
    if (t[b] != '{' && t[b] != '[') continue;
    int depth = 0;
    JsonStringTracker strings;
    for (size_t i = b; i < t.size(); ++i) {
      const char c = t[i];
      if (strings.InString(c)) continue;
      if (c == '{' || c == '[')
        ++depth;
      else if (c == '}' || c == ']') {
        if (--depth == 0) {
          j = json::parse(t.substr(b, i - b + 1), nullptr, false);
          if (!j.is_discarded()) return j;
          break;
        }
      }
    }
  }
  return std::nullopt;
}

bool Score(const EvalItem& item, const std::string& output) {
  switch (item.metric) {
    case Metric::kExact:
      return Trim(output) == Trim(ExpectedText(item.expected));
    case Metric::kContains:
      return output.find(ExpectedText(item.expected)) != std::string::npos;
    case Metric::kRegex:
      return RegexSearch(ExpectedText(item.expected), output);
    case Metric::kJson: {
      const auto got = ExtractJson(output);
      return got && *got == item.expected;
    }
  }
  return false;
}

Result<std::vector<EvalItem>> LoadDataset(const std::string& path, Metric default_metric) {
  STET_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  std::vector<EvalItem> items;
  std::set<std::string> ids;
  STET_RETURN_IF_ERROR(ForEachLine(
      text,
      [&](const std::string& line, int lineno) -> Status {
        const std::string where = path + ":" + std::to_string(lineno) + ": ";
        json j = json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) return InvalidArgument(where + "not a JSON object");
        EvalItem it;
        if (j.contains("id") && j["id"].is_string())
          it.id = j["id"].get<std::string>();
        else if (j.contains("id") && j["id"].is_number_integer())
          it.id = std::to_string(j["id"].get<int64_t>());
        else
          return InvalidArgument(where + "needs an \"id\" (string or integer)");
        if (!ids.insert(it.id).second)
          return InvalidArgument(where + "duplicate id '" + it.id + "'");
        if (j.contains("prompt") && j["prompt"].is_string()) {
          it.prompt = j["prompt"].get<std::string>();
        } else if (j.contains("messages") && j["messages"].is_array() && !j["messages"].empty()) {
          it.messages = j["messages"];
        } else {
          return InvalidArgument(where +
                                 "needs \"prompt\" (string) or \"messages\" (non-empty array)");
        }
        if (!j.contains("expected")) return InvalidArgument(where + "needs \"expected\"");
        it.metric = default_metric;
        if (j.contains("metric")) {
          if (!j["metric"].is_string())
            return InvalidArgument(where + "\"metric\" must be a string");
          auto m = ParseMetric(j["metric"].get<std::string>());
          if (!m.ok()) return InvalidArgument(where + m.status().message());
          it.metric = *m;
        }
        if (j.contains("max_tokens")) {
          if (!j["max_tokens"].is_number_integer() || j["max_tokens"].get<int64_t>() < 1) {
            return InvalidArgument(where + "\"max_tokens\" must be a positive integer");
          }
          it.max_tokens = static_cast<int>(j["max_tokens"].get<int64_t>());
        }
        it.expected = j["expected"];
        if (it.metric == Metric::kJson) {
          if (it.expected.is_string()) {
            json e = json::parse(it.expected.get<std::string>(), nullptr, false);
            if (!e.is_discarded()) it.expected = e;  // "expected": "{\"a\": 1}" means the object
          }
        } else if (!it.expected.is_string()) {
          return InvalidArgument(where + "\"expected\" must be a string for metric " +
                                 MetricName(it.metric));
        }
        if (it.metric == Metric::kRegex) {
          std::string err;
          pcre2_code* re = CompileRegex(it.expected.get<std::string>(), &err);
          if (!re) return InvalidArgument(where + "regex does not compile: " + err);
          pcre2_code_free(re);
        }
        items.push_back(std::move(it));
        return Status::Ok();
      },
      /*blank=*/" \t\r"));
  if (items.empty()) return InvalidArgument("'" + path + "' holds no items");
  return items;
}

Result<json> RunEval(const EvalOptions& o, const std::vector<EvalItem>& items) {
  if (o.repeats < 1) return InvalidArgument("--repeats must be at least 1");
  if (o.concurrency < 1 || o.concurrency > 1024)
    return InvalidArgument("--concurrency must be in [1, 1024]");
  if (o.bootstrap_resamples < 100) return InvalidArgument("--bootstrap must be at least 100");
  HttpOptions http;
  http.api_key = o.api_key;
  http.timeout_ms = o.timeout_ms;

  struct RunRecord {
    bool done = false;
    bool pass = false;
    std::string output, fingerprint, error;
    double seconds = 0;
    std::optional<int64_t> seed;
  };
  const size_t n_items = items.size();
  std::vector<RunRecord> records(n_items * o.repeats);
  const std::string timestamp = UtcTimestamp();
  {
    ProgressBar bar("eval", static_cast<int64_t>(records.size()));
    std::mutex mu;
    int64_t finished = 0;
    WorkerPool pool(o.concurrency, http);
    // Repeat-major order: every item gets its first answer before any gets its second.
    for (int r = 0; r < o.repeats; ++r) {
      for (size_t i = 0; i < n_items; ++i) {
        pool.Submit([&, r, i](HttpClient& client) {
          const EvalItem& it = items[i];
          CompletionRequest req;
          req.model = o.model;
          req.prompt = it.prompt;
          req.messages = it.messages;
          req.max_tokens = it.max_tokens.value_or(o.max_tokens);
          req.temperature = o.temperature;
          if (o.seed_policy == SeedPolicy::kFixed) req.seed = o.seed;
          if (o.seed_policy == SeedPolicy::kPerRepeat) req.seed = o.seed + r;
          RunRecord rec;
          rec.seed = req.seed;
          auto c = Complete(client, o.endpoint, req);
          if (c.ok()) {
            rec.output = c->text;
            rec.fingerprint = c->system_fingerprint;
            rec.seconds = c->seconds;
            rec.pass = Score(it, c->text);
          } else {
            rec.error = c.status().ToString();
          }
          rec.done = true;
          std::lock_guard<std::mutex> lock(mu);
          records[i * o.repeats + r] = std::move(rec);
          bar.Update(++finished);
        });
      }
    }
    pool.Wait();
  }

  std::string dataset_sha;
  if (auto h = Sha256File(o.dataset); h.ok()) dataset_sha = *h;
  json doc;
  doc["tool"] = "stet eval";
  doc["schema"] = 1;
  // What shaped every score: the run states it once and each result carries it again.
  const json context = {{"model", o.model},
                        {"endpoint", o.endpoint},
                        {"timestamp", timestamp},
                        {"concurrency", o.concurrency},
                        {"seed_policy", SeedPolicyName(o.seed_policy)}};
  json run = context;
  run["base_seed"] = o.seed_policy == SeedPolicy::kNone ? json() : json(o.seed);
  run["temperature"] = o.temperature;
  run["max_tokens"] = o.max_tokens;
  run["metric"] = MetricName(o.metric);
  run["repeats"] = o.repeats;
  run["dataset"] = o.dataset;
  run["dataset_sha256"] = dataset_sha;
  run["bootstrap"] = {{"resamples", o.bootstrap_resamples}, {"seed", o.bootstrap_seed}};
  doc["run"] = run;
  json jitems = json::array();
  for (size_t i = 0; i < n_items; ++i) {
    const EvalItem& it = items[i];
    json ji;
    ji["id"] = it.id;
    ji["metric"] = MetricName(it.metric);
    ji["expected"] = it.expected;
    json results = json::array();
    for (int r = 0; r < o.repeats; ++r) {
      const RunRecord& rec = records[i * o.repeats + r];
      json jr;
      jr["repeat"] = r;
      jr["seed"] = rec.seed ? json(*rec.seed) : json();
      if (!rec.error.empty()) {
        jr["error"] = rec.error;
      } else {
        jr["pass"] = rec.pass;
        jr["output"] = rec.output;
        jr["fingerprint"] = rec.fingerprint;
        jr["seconds"] = rec.seconds;
      }
      jr.update(context);
      results.push_back(jr);
    }
    ji["results"] = results;
    jitems.push_back(ji);
  }
  doc["items"] = jitems;
  Summarize(&doc, o.bootstrap_resamples, o.bootstrap_seed);
  return doc;
}

void Summarize(json* doc, int resamples, uint64_t seed) {
  json& d = *doc;
  int64_t passes = 0, scored = 0, errors = 0;
  std::vector<double> rates;
  json flaky = json::array();
  std::set<std::string> all_fps;
  for (json& it : d["items"]) {
    int64_t p = 0, n = 0;
    std::set<std::string> fps;
    for (const json& r : it["results"]) {
      if (r.contains("error")) {
        ++errors;
        continue;
      }
      ++n;
      if (r.value("pass", false)) ++p;
      const std::string fp = r.value("fingerprint", std::string());
      if (!fp.empty()) fps.insert(fp);
    }
    it["passes"] = p;
    it["runs"] = n;
    it["pass_rate"] = n ? json(static_cast<double>(p) / n) : json();
    it["flaky"] = p > 0 && p < n;
    it["fingerprints"] = std::vector<std::string>(fps.begin(), fps.end());
    all_fps.insert(fps.begin(), fps.end());
    if (n > 0) {
      const Interval w = WilsonInterval(p, n);
      it["wilson95"] = {w.lo, w.hi};
      rates.push_back(static_cast<double>(p) / n);
    }
    if (p > 0 && p < n) flaky.push_back(it["id"]);
    passes += p;
    scored += n;
  }
  d["run"]["fingerprints"] = std::vector<std::string>(all_fps.begin(), all_fps.end());
  json s;
  s["items"] = d["items"].size();
  s["items_scored"] = rates.size();
  s["runs_scored"] = scored;
  s["errors"] = errors;
  s["passes"] = passes;
  if (scored > 0) {
    const Interval w = WilsonInterval(passes, scored);
    s["pooled_rate"] = static_cast<double>(passes) / scored;
    s["wilson95"] = {w.lo, w.hi};
  }
  if (!rates.empty()) {
    const Interval b = BootstrapMeanCi(rates, resamples, seed);
    s["mean_item_rate"] = Mean(rates);
    s["bootstrap95"] = {b.lo, b.hi};
  }
  s["flaky"] = flaky;
  d["summary"] = s;
}

namespace {

std::string Num(const json& v, int sig = 4) {
  return v.is_number() ? FormatDouble(v.get<double>(), sig) : "n/a";
}
std::string Td(const std::string& escaped) { return "<td>" + escaped + "</td>"; }
std::string Interval2(const json& v) {
  return v.is_array() && v.size() == 2 ? "[" + Num(v[0], 3) + ", " + Num(v[1], 3) + "]" : "n/a";
}

}  // namespace

std::string EvalSummaryText(const json& d) {
  const json& s = d["summary"];
  const json& run = d["run"];
  std::string out;
  out += "items: " + std::to_string(s.value("items", 0)) +
         ", runs scored: " + std::to_string(s.value("runs_scored", 0)) +
         ", request errors: " + std::to_string(s.value("errors", 0)) + "\n";
  out += "pooled pass rate: " + Num(s.value("pooled_rate", json())) + "  95% Wilson " +
         Interval2(s.value("wilson95", json())) + "\n";
  out += "mean per-item pass rate: " + Num(s.value("mean_item_rate", json())) +
         "  95% cluster bootstrap " + Interval2(s.value("bootstrap95", json())) + "\n";
  std::string flaky;
  for (const json& id : s["flaky"]) flaky += (flaky.empty() ? "" : ", ") + id.get<std::string>();
  out += "flaky items (" + std::to_string(s["flaky"].size()) +
         "): " + (flaky.empty() ? "none" : flaky) + "\n";
  std::string fps;
  for (const json& f : run["fingerprints"]) fps += (fps.empty() ? "" : ", ") + f.get<std::string>();
  out += "system_fingerprint: " + (fps.empty() ? std::string("(none sent)") : fps) +
         (run["fingerprints"].size() > 1 ? "  (CHANGED during the run: scores mix backends)" : "") +
         "\n";
  return out;
}

std::string EvalToHtml(const json& d) {
  const json& s = d["summary"];
  const json& run = d["run"];
  std::string b = "<h1>stet eval</h1>";
  b += "<p class=\"verdict\">" +
       XmlEscape("mean per-item pass rate " + Num(s.value("mean_item_rate", json())) + ", 95% CI " +
                 Interval2(s.value("bootstrap95", json())) +
                 " (cluster bootstrap over items); pooled " + Num(s.value("pooled_rate", json())) +
                 ", 95% Wilson " + Interval2(s.value("wilson95", json()))) +
       "</p>";
  if (run["fingerprints"].size() > 1) {
    b +=
        "<p class=\"note\">system_fingerprint changed during the run: the scores mix backends.</p>";
  }
  b += "<table>";
  for (const char* k : {"model", "endpoint", "timestamp", "concurrency", "seed_policy", "base_seed",
                        "temperature", "max_tokens", "metric", "repeats", "dataset",
                        "dataset_sha256", "fingerprints", "bootstrap"}) {
    b += "<tr><th>" + std::string(k) + "</th>" +
         Td("<code>" + XmlEscape(run.value(k, json()).dump()) + "</code>") + "</tr>";
  }
  b +=
      "<tr><th>runs scored / errors</th>" +
      Td(std::to_string(s.value("runs_scored", 0)) + " / " + std::to_string(s.value("errors", 0))) +
      "</tr></table>";

  std::vector<Bar> summary_bars;
  if (s.contains("pooled_rate")) {
    summary_bars.push_back({"pooled (Wilson)", s["pooled_rate"].get<double>(),
                            s["wilson95"][0].get<double>(), s["wilson95"][1].get<double>(), false});
  }
  if (s.contains("mean_item_rate")) {
    summary_bars.push_back({"item mean (bootstrap)", s["mean_item_rate"].get<double>(),
                            s["bootstrap95"][0].get<double>(), s["bootstrap95"][1].get<double>(),
                            false});
  }
  b += SvgBars("Pass rate with 95% confidence interval", "pass rate", summary_bars);
  std::vector<Bar> item_bars;
  for (const json& it : d["items"]) {
    if (!it["pass_rate"].is_number()) continue;
    item_bars.push_back({it["id"].get<std::string>(), it["pass_rate"].get<double>(),
                         it["wilson95"][0].get<double>(), it["wilson95"][1].get<double>(),
                         it["flaky"].get<bool>()});
  }
  b += SvgBars("Per-item pass rate (flaky items in orange; whiskers: 95% Wilson)", "pass rate",
               item_bars);

  b += "<h2>Items</h2><table><tr><th>id</th><th>metric</th><th>pass rate</th><th>passes / "
       "runs</th><th>flaky</th>"
       "<th>expected</th><th>distinct outputs (count)</th></tr>";
  for (const json& it : d["items"]) {
    std::map<std::string, int> outs;
    std::vector<std::string> order;
    std::string errs;
    for (const json& r : it["results"]) {
      if (r.contains("error")) {
        errs += "<p class=\"note\">" + XmlEscape(r["error"].get<std::string>()) + "</p>";
        continue;
      }
      const std::string o =
          std::string(r.value("pass", false) ? "\xE2\x9C\x93 " : "\xE2\x9C\x97 ") +
          r.value("output", std::string());  // ✓ / ✗, then the output
      if (outs[o]++ == 0) order.push_back(o);
    }
    std::string cell;
    for (const auto& o : order)
      cell += "<pre>(" + std::to_string(outs[o]) + ") " + XmlEscape(o) + "</pre>";
    b += "<tr>" + Td(XmlEscape(it["id"].get<std::string>())) +
         Td(XmlEscape(it["metric"].get<std::string>())) + Td(Num(it["pass_rate"], 3)) +
         Td(std::to_string(it["passes"].get<int64_t>()) + " / " +
            std::to_string(it["runs"].get<int64_t>())) +
         Td(it["flaky"].get<bool>() ? "<b>yes</b>" : "no") +
         Td("<code>" +
            XmlEscape(it["expected"].is_string() ? it["expected"].get<std::string>()
                                                 : it["expected"].dump()) +
            "</code>") +
         Td(cell + errs) + "</tr>";
  }
  b += "</table>";
  return HtmlPage("stet eval: " + run.value("model", std::string()), b);
}

Result<json> CompareResults(const json& a, const json& b, int resamples, uint64_t seed) {
  try {
    auto rates = [](const json& d) {
      std::map<std::string, double> m;
      std::vector<std::string> order;
      for (const json& it : d.at("items")) {
        if (!it.at("pass_rate").is_number()) continue;
        const std::string id = it.at("id").get<std::string>();
        m[id] = it["pass_rate"].get<double>();
        order.push_back(id);
      }
      return std::make_pair(m, order);
    };
    const auto [ra, order_a] = rates(a);
    const auto [rb, order_b] = rates(b);
    std::vector<std::string> shared;
    std::vector<double> va, vb;
    for (const auto& id : order_a) {
      if (rb.count(id)) {
        shared.push_back(id);
        va.push_back(ra.at(id));
        vb.push_back(rb.at(id));
      }
    }
    if (shared.empty()) return InvalidArgument("the two results files share no scored item ids");
    std::vector<double> d(va.size());
    int64_t plus = 0, minus = 0, a_only = 0, b_only = 0, ties = 0;
    for (size_t i = 0; i < va.size(); ++i) {
      d[i] = vb[i] - va[i];
      if (d[i] > 0) ++plus;
      if (d[i] < 0) ++minus;
      const int ma = va[i] > 0.5 ? 1 : va[i] < 0.5 ? 0 : -1;  // majority outcome; -1: tie
      const int mb = vb[i] > 0.5 ? 1 : vb[i] < 0.5 ? 0 : -1;
      if (ma < 0 || mb < 0)
        ++ties;
      else if (ma == 1 && mb == 0)
        ++a_only;
      else if (ma == 0 && mb == 1)
        ++b_only;
    }
    const double delta = Mean(d);
    const Interval ci = PairedBootstrapCi(va, vb, resamples, seed);
    json out;
    out["tool"] = "stet eval compare";
    out["shared_items"] = shared.size();
    out["only_in_a"] = ra.size() - shared.size();
    out["only_in_b"] = rb.size() - shared.size();
    out["mean_a"] = Mean(va);
    out["mean_b"] = Mean(vb);
    out["delta"] = delta;
    out["paired_bootstrap95"] = {ci.lo, ci.hi};
    out["bootstrap"] = {{"resamples", resamples}, {"seed", seed}};
    out["sign_test"] = {
        {"b_higher", plus}, {"a_higher", minus}, {"p_value", SignTestPValue(plus, minus)}};
    out["mcnemar"] = {{"pass_a_only", a_only},
                      {"pass_b_only", b_only},
                      {"majority_ties_dropped", ties},
                      {"p_value", McNemarExactPValue(a_only, b_only)}};
    char buf[256];
    if (ci.lo <= 0 && ci.hi >= 0) {
      std::snprintf(buf, sizeof buf,
                    "no detectable difference (\xCE\x94 = %+.3f, 95%% CI [%.3f, %.3f])", delta,
                    ci.lo, ci.hi);
    } else {
      std::snprintf(buf, sizeof buf, "B %s by %.3f \xC2\xB1 %.3f (95%% CI [%.3f, %.3f])",
                    delta > 0 ? "better" : "worse", std::fabs(delta), (ci.hi - ci.lo) / 2, ci.lo,
                    ci.hi);
    }
    out["verdict"] = buf;
    json notes = json::array();
    const json& run_a = a.at("run");
    const json& run_b = b.at("run");
    for (const char* k :
         {"model", "endpoint", "fingerprints", "temperature", "seed_policy", "base_seed", "metric",
          "repeats", "concurrency", "max_tokens", "dataset_sha256"}) {
      const json va_k = run_a.value(k, json()), vb_k = run_b.value(k, json());
      if (va_k != vb_k)
        notes.push_back(std::string(k) + " differs: A " + va_k.dump() + ", B " + vb_k.dump());
    }
    if (shared.size() < 10)
      notes.push_back("fewer than 10 shared items: intervals are wide and tests weak");
    out["notes"] = notes;
    return out;
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("not a stet eval results file: ") + e.what());
  }
}

std::string CompareSummaryText(const json& c) {
  std::string s;
  s += "shared items: " + std::to_string(c["shared_items"].get<int64_t>()) +
       " (only in A: " + std::to_string(c["only_in_a"].get<int64_t>()) +
       ", only in B: " + std::to_string(c["only_in_b"].get<int64_t>()) + ")\n";
  s += "mean per-item pass rate: A " + Num(c["mean_a"]) + ", B " + Num(c["mean_b"]) + "\n";
  s += "paired difference B - A: " + Num(c["delta"]) + ", 95% paired bootstrap " +
       Interval2(c["paired_bootstrap95"]) + "\n";
  s += "sign test (per-item rates): B higher on " +
       std::to_string(c["sign_test"]["b_higher"].get<int64_t>()) + ", A higher on " +
       std::to_string(c["sign_test"]["a_higher"].get<int64_t>()) +
       ", exact p = " + Num(c["sign_test"]["p_value"]) + "\n";
  s += "McNemar (majority outcomes): pass only in A " +
       std::to_string(c["mcnemar"]["pass_a_only"].get<int64_t>()) + ", only in B " +
       std::to_string(c["mcnemar"]["pass_b_only"].get<int64_t>()) +
       ", exact p = " + Num(c["mcnemar"]["p_value"]) + "\n";
  s += "verdict: " + c["verdict"].get<std::string>() + "\n";
  for (const json& n : c["notes"]) s += "note: " + n.get<std::string>() + "\n";
  return s;
}

}  // namespace stet::forensics
