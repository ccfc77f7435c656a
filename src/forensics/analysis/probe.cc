// Companion traffic: at a level c > 1, a quarter of the c workers (at least
// one) repeat the probe request and the rest send other prompts of other
// lengths until the probe runs are done, so the probe request shares each
// batch with unrelated work — what production traffic does to it. Companion
// choices are drawn from Philox, so two probes send the same companion mix.
#include "forensics/analysis/probe.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>

#include "base/progress.h"
#include "base/rng.h"
#include "forensics/analysis/svg.h"

namespace stet::forensics {

using nlohmann::json;

namespace {

constexpr const char* kCompanionTexts[] = {
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "List the planets of the solar system and one fact about each.",
    "Explain how a hash table handles collisions.",
    "Translate into French: The weather is lovely today and the market is open.",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Summarize the causes of the French Revolution in three sentences.",
    "Q: What is 17 times 23?\nA:",
    "Once upon a time, in a village at the edge of a great forest,",
    "Give me a recipe for a simple tomato soup.",
    "The quick brown fox jumps over the lazy dog. Describe the scene in detail.",
    "SELECT name, COUNT(*) FROM orders GROUP BY name ORDER BY 2 DESC; -- explain this query",
    "Write a haiku about autumn rain.",
};
constexpr int kNumCompanionTexts = sizeof(kCompanionTexts) / sizeof(kCompanionTexts[0]);

CompletionRequest CompanionRequest(const ProbeOptions& o, uint64_t stream, uint64_t n) {
  const auto r = Philox4x32(
      {static_cast<uint32_t>(n), static_cast<uint32_t>(n >> 32), static_cast<uint32_t>(stream),
       0xC0u},
      {static_cast<uint32_t>(o.companion_seed), static_cast<uint32_t>(o.companion_seed >> 32)});
  std::string text;
  const int repeats = 1 + static_cast<int>(r[1] % 6);
  for (int i = 0; i < repeats; ++i) {
    text += kCompanionTexts[(r[0] + i) % kNumCompanionTexts];
    text += i + 1 < repeats ? "\n" : "";
  }
  CompletionRequest c;
  c.model = o.request.model;
  c.max_tokens =
      4 + static_cast<int>(r[2] % static_cast<uint32_t>(std::max(8, 2 * o.request.max_tokens)));
  c.temperature = 0;
  if (o.request.chat()) {
    c.messages = json::array({{{"role", "user"}, {"content", text}}});
  } else {
    c.prompt = text;
  }
  return c;
}

HttpOptions MakeHttpOptions(const ProbeOptions& o) {
  HttpOptions h;
  h.api_key = o.api_key;
  h.timeout_ms = o.timeout_ms;
  return h;
}

std::string ForkWhere(const Fork& f) {
  if (f.token_index >= 0) return "token " + std::to_string(f.token_index);
  return "byte " + std::to_string(f.byte_offset);
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The first token position where two runs' logprobs (chosen or top) differ in any bit; -1 if none.
int FirstLogprobDifference(const Completion& a, const Completion& b) {
  const size_t n = std::min(a.tokens.size(), b.tokens.size());
  for (size_t k = 0; k < n; ++k) {
    const TokenLogprob& x = a.tokens[k];
    const TokenLogprob& y = b.tokens[k];
    bool same =
        x.token == y.token && SameBits(x.logprob, y.logprob) && x.top.size() == y.top.size();
    for (size_t t = 0; same && t < x.top.size(); ++t) {
      same = x.top[t].first == y.top[t].first && SameBits(x.top[t].second, y.top[t].second);
    }
    if (!same) return static_cast<int>(k);
  }
  return a.tokens.size() == b.tokens.size() ? -1 : static_cast<int>(n);
}

}  // namespace

std::string UtcTimestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<ProbeResult> RunProbe(const ProbeOptions& options) {
  if (options.runs < 1) return InvalidArgument("--runs must be at least 1");
  if (options.levels.empty()) return InvalidArgument("--concurrency needs at least one level");
  for (int c : options.levels) {
    if (c < 1 || c > 1024)
      return InvalidArgument("concurrency levels must be in [1, 1024], not " + std::to_string(c));
  }
  ProbeResult result;
  result.options = options;
  result.timestamp = UtcTimestamp();
  const HttpOptions http = MakeHttpOptions(options);

  // Preflight (not counted): finds out whether the endpoint gives logprobs and
  // fails fast on a wrong URL, model or key.
  CompletionRequest req = options.request;
  req.top_logprobs = options.logprobs == LogprobMode::kOff ? 0 : options.top_logprobs;
  {
    HttpClient client(http);
    auto first = Complete(client, options.endpoint, req);
    if (!first.ok() && req.top_logprobs > 0 && options.logprobs == LogprobMode::kAuto) {
      result.logprobs_note =
          "the endpoint refused logprobs (" + first.status().message() + "); comparing text only";
      req.top_logprobs = 0;
      first = Complete(client, options.endpoint, req);
    }
    if (!first.ok()) return first.status();
    if (req.top_logprobs > 0 && !first->has_logprobs) {
      if (options.logprobs == LogprobMode::kRequire) {
        return Unimplemented("--logprobs: the endpoint answered without logprobs");
      }
      result.logprobs_note =
          "the endpoint sent no logprobs; forks are located by byte, gaps unknown";
      req.top_logprobs = 0;
    }
    if (options.logprobs == LogprobMode::kOff)
      result.logprobs_note = "logprobs not requested (--no-logprobs)";
  }
  result.logprobs_used = req.top_logprobs > 0;
  result.options.request = req;

  const int64_t total =
      static_cast<int64_t>(options.runs) * static_cast<int64_t>(options.levels.size());
  ProgressBar bar("probe", total);
  std::mutex mu;
  int64_t finished = 0;

  for (size_t li = 0; li < options.levels.size(); ++li) {
    const int c = options.levels[li];
    LevelResult lr;
    lr.concurrency = c;
    if (c == 1 || !options.companion) {
      lr.probe_workers = std::min(c, options.runs);
      lr.companion_workers = 0;
    } else {
      lr.probe_workers = std::max(1, std::min(options.runs, c / 4));
      lr.companion_workers = c - lr.probe_workers;
    }
    std::atomic<int> next{0};
    std::atomic<int> probes_left{lr.probe_workers};
    std::atomic<bool> stop{false};
    const auto t0 = std::chrono::steady_clock::now();
    {
      WorkerPool pool(lr.probe_workers + lr.companion_workers, http);
      for (int k = 0; k < lr.companion_workers; ++k) {
        pool.Submit([&, k](HttpClient& client) {
          client.set_cancel(&stop);
          const uint64_t stream = static_cast<uint64_t>(li) * 4096 + k;
          for (uint64_t n = 0; !stop.load(); ++n) {
            auto r = Complete(client, options.endpoint, CompanionRequest(options, stream, n));
            std::lock_guard<std::mutex> lock(mu);
            if (r.ok()) {
              ++lr.companion_requests;
            } else if (r.status().code() != StatusCode::kCancelled) {
              ++lr.companion_errors;
            }
          }
          client.set_cancel(nullptr);
        });
      }
      for (int k = 0; k < lr.probe_workers; ++k) {
        pool.Submit([&](HttpClient& client) {
          for (int i = next++; i < options.runs; i = next++) {
            auto r = Complete(client, options.endpoint, req);
            std::lock_guard<std::mutex> lock(mu);
            if (r.ok()) {
              lr.runs.push_back(std::move(r).value());
            } else {
              ++lr.errors;
              if (lr.error_messages.size() < 5) lr.error_messages.push_back(r.status().ToString());
            }
            bar.Update(++finished);
          }
          if (--probes_left == 0) stop = true;
        });
      }
      pool.Wait();
    }
    lr.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lr.analysis = AnalyzeRuns(lr.runs);
    result.levels.push_back(std::move(lr));
  }
  bar.Finish();

  std::vector<Completion> all;
  for (const LevelResult& lr : result.levels) all.insert(all.end(), lr.runs.begin(), lr.runs.end());
  result.overall = AnalyzeRuns(all);
  Judge(&result);
  return result;
}

void Judge(ProbeResult* r) {
  r->notes.clear();
  std::set<std::string> fps;
  int errors = 0, empty_levels = 0;
  for (const LevelResult& lr : r->levels) {
    fps.insert(lr.analysis.fingerprints.begin(), lr.analysis.fingerprints.end());
    errors += lr.errors;
    if (lr.runs.empty()) ++empty_levels;
  }
  r->fingerprint_changed = fps.size() > 1;

  // The level with the most distinct outputs (the lowest such concurrency).
  const LevelResult* worst = nullptr;
  for (const LevelResult& lr : r->levels) {
    if (!worst || lr.analysis.distinct() > worst->analysis.distinct()) worst = &lr;
  }
  const bool within_level = worst && worst->analysis.distinct() > 1;
  const bool across_levels = r->overall.distinct() > 1;
  // Same text everywhere, but the logprobs moved: the logits depend on what else the server ran.
  const bool logits_moved = r->overall.has_logprobs && r->overall.distinct_logprob_traces > 1;

  if (r->fingerprint_changed) {
    std::string list;
    for (const auto& f : fps) list += (list.empty() ? "" : ", ") + f;
    r->verdict = "comparison void: system_fingerprint changed during the probe (" + list +
                 "); the backend changed, so differing outputs prove nothing";
    r->exit_code = 2;
  } else if (within_level) {
    const auto fork = worst->analysis.EarliestFork();
    r->verdict =
        "nondeterministic: " + std::to_string(worst->analysis.distinct()) +
        " distinct outputs of " + std::to_string(worst->analysis.runs) + " at concurrency " +
        std::to_string(worst->concurrency) +
        (fork ? ", first fork at " + ForkWhere(*fork) + " with " + DescribeGap(*fork) : "");
    r->exit_code = 1;
  } else if (across_levels) {
    const auto fork = r->overall.EarliestFork();
    std::string which;
    for (const LevelResult& lr : r->levels) {
      if (lr.runs.empty()) continue;
      which += (which.empty() ? "" : ", ") + std::to_string(lr.concurrency) + ": output #" +
               std::to_string(1 + [&] {
                 for (size_t v = 0; v < r->overall.variants.size(); ++v) {
                   if (r->overall.variants[v].text == lr.runs[0].text) return static_cast<int>(v);
                 }
                 return 0;
               }());
    }
    r->verdict =
        "nondeterministic across concurrency levels: each level was self-consistent, but "
        "the output depends on the level (" +
        which + ")" +
        (fork ? ", first fork at " + ForkWhere(*fork) + " with " + DescribeGap(*fork) : "");
    r->exit_code = 1;
  } else if (logits_moved) {
    const LevelResult* most = nullptr;  // the level with most distinct traces (the lowest on ties)
    for (const LevelResult& lr : r->levels) {
      if (!most || lr.analysis.distinct_logprob_traces > most->analysis.distinct_logprob_traces)
        most = &lr;
    }
    std::vector<const Completion*> runs;
    for (const LevelResult& lr : r->levels) {
      for (const Completion& c : lr.runs) runs.push_back(&c);
    }
    int first = -1;
    for (size_t i = 1; i < runs.size(); ++i) {
      const int k = FirstLogprobDifference(*runs[0], *runs[i]);
      if (k >= 0 && (first < 0 || k < first)) first = k;
    }
    const std::string at =
        first >= 0 ? "; the earliest differing logprob is at token " + std::to_string(first) : "";
    if (most->analysis.distinct_logprob_traces > 1) {
      r->verdict = "nondeterministic logits: the same text in every run, but " +
                   std::to_string(most->analysis.distinct_logprob_traces) +
                   " distinct logprob traces of " + std::to_string(most->analysis.runs) +
                   " runs at concurrency " + std::to_string(most->concurrency) + at;
    } else {
      r->verdict =
          "nondeterministic logits across concurrency levels: the same text in every run and one "
          "logprob trace per level, but the traces depend on the level" +
          at;
    }
    r->exit_code = 1;
  } else if (errors > 0 || r->levels.empty()) {
    r->verdict =
        "incomplete: " + std::to_string(errors) + " probe request(s) failed" +
        (empty_levels ? " (" + std::to_string(empty_levels) + " level(s) without any answer)"
                      : "") +
        "; no divergence among the answers that came back";
    r->exit_code = 2;
  } else {
    r->verdict = "deterministic at all tested levels";
    r->exit_code = 0;
  }

  if (errors > 0 && r->exit_code != 2) {
    r->notes.push_back(std::to_string(errors) +
                       " probe request(s) failed; see the per-level errors");
  }
  if (fps.empty()) {
    r->notes.push_back(
        "the endpoint sent no system_fingerprint, so a backend change during the probe "
        "cannot be told apart from nondeterminism");
  }
  if (r->overall.has_logprobs && r->overall.distinct_logprob_traces > r->overall.distinct() &&
      r->overall.distinct() > 1) {
    r->notes.push_back(std::to_string(r->overall.distinct_logprob_traces) +
                       " distinct logprob traces for " + std::to_string(r->overall.distinct()) +
                       " distinct output(s): the logits changed from run to run even where the "
                       "chosen tokens did not");
  }
  int empty = 0, total = 0;
  for (const LevelResult& lr : r->levels) {
    for (const Completion& c : lr.runs) {
      ++total;
      empty += c.text.empty();
    }
  }
  if (empty > 0 && empty < total) {
    r->notes.push_back(
        std::to_string(empty) + " of " + std::to_string(total) +
        " answers came back empty: the server may have cut requests off under load "
        "(llama-cpp-python's server interrupts a stream when a new request arrives)");
  }
  const auto& rq = r->options.request;
  if (rq.temperature > 0 && !rq.seed) {
    r->notes.push_back("temperature > 0 without --seed: sampling alone makes outputs differ");
  }
  if (!r->logprobs_note.empty()) r->notes.push_back(r->logprobs_note);
}

namespace {

json ForkJson(const Fork& f) {
  json j;
  j["token_index"] = f.token_index >= 0 ? json(f.token_index) : json();
  j["byte_offset"] = f.byte_offset >= 0 ? json(f.byte_offset) : json();
  j["reference_token"] = f.reference_token;
  j["variant_token"] = f.variant_token;
  j["gap_reference"] = f.gap_reference ? json(*f.gap_reference) : json();
  j["gap_variant"] = f.gap_variant ? json(*f.gap_variant) : json();
  j["gap_lower_bound"] = f.gap_bound ? json(*f.gap_bound) : json();
  j["gap_text"] = DescribeGap(f);
  return j;
}

json AnalysisJson(const DivergenceReport& a) {
  json j;
  j["runs"] = a.runs;
  j["distinct_outputs"] = a.distinct();
  j["distinct_logprob_traces"] = a.has_logprobs ? json(a.distinct_logprob_traces) : json();
  j["fingerprints"] = json(std::vector<std::string>(a.fingerprints.begin(), a.fingerprints.end()));
  json vs = json::array();
  for (const Variant& v : a.variants) {
    json jv;
    jv["count"] = v.count;
    jv["frequency"] = a.runs ? static_cast<double>(v.count) / a.runs : 0.0;
    jv["text"] = v.text;
    jv["fork"] = v.fork ? ForkJson(*v.fork) : json();
    vs.push_back(jv);
  }
  j["variants"] = vs;
  j["fork_positions"] = a.ForkPositions();
  return j;
}

}  // namespace

json ProbeToJson(const ProbeResult& r) {
  json j;
  j["tool"] = "stet probe";
  j["timestamp"] = r.timestamp;
  j["endpoint"] = r.options.endpoint;
  j["request"] = r.options.request.ToJson();
  j["runs_per_level"] = r.options.runs;
  j["companion_traffic"] = r.options.companion;
  j["logprobs_used"] = r.logprobs_used;
  j["verdict"] = r.verdict;
  j["exit_code"] = r.exit_code;
  j["fingerprint_changed"] = r.fingerprint_changed;
  j["notes"] = r.notes;
  json levels = json::array();
  for (const LevelResult& lr : r.levels) {
    json l;
    l["concurrency"] = lr.concurrency;
    l["probe_workers"] = lr.probe_workers;
    l["companion_workers"] = lr.companion_workers;
    l["companion_requests"] = lr.companion_requests;
    l["companion_errors"] = lr.companion_errors;
    l["errors"] = lr.errors;
    l["error_messages"] = lr.error_messages;
    l["seconds"] = lr.seconds;
    l["analysis"] = AnalysisJson(lr.analysis);
    levels.push_back(l);
  }
  j["levels"] = levels;
  j["overall"] = AnalysisJson(r.overall);
  return j;
}

namespace {

std::string Td(const std::string& escaped) { return "<td>" + escaped + "</td>"; }

// The text with the fork point marked: common prefix, then the rest highlighted.
std::string MarkedText(const std::string& text, int byte_offset) {
  if (byte_offset < 0 || byte_offset > static_cast<int>(text.size())) {
    return "<pre>" + XmlEscape(text) + "</pre>";
  }
  // Back up to a UTF-8 boundary so the split never cuts a character.
  size_t cut = static_cast<size_t>(byte_offset);
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return "<pre>" + XmlEscape(text.substr(0, cut)) + "<span class=\"fork\">" +
         XmlEscape(text.substr(cut)) + "</span></pre>";
}

std::string VariantTable(const DivergenceReport& a) {
  std::string s =
      "<table><tr><th>#</th><th>count</th><th>freq</th><th>fork vs #1</th>"
      "<th>#1 token</th><th>this token</th><th>logprob gap</th><th>text (fork "
      "highlighted)</th></tr>";
  for (size_t i = 0; i < a.variants.size(); ++i) {
    const Variant& v = a.variants[i];
    s += "<tr>" + Td(std::to_string(i + 1)) + Td(std::to_string(v.count)) +
         Td(FormatDouble(a.runs ? static_cast<double>(v.count) / a.runs : 0, 3));
    if (v.fork) {
      s += Td(XmlEscape(ForkWhere(*v.fork))) +
           Td("<code>" + ShowToken(v.fork->reference_token) + "</code>") +
           Td("<code>" + ShowToken(v.fork->variant_token) + "</code>") +
           Td(XmlEscape(DescribeGap(*v.fork))) + Td(MarkedText(v.text, v.fork->byte_offset));
    } else {
      s += Td("reference") + Td("") + Td("") + Td("") + Td(MarkedText(v.text, -1));
    }
    s += "</tr>";
  }
  return s + "</table>";
}

}  // namespace

std::string ProbeToHtml(const ProbeResult& r) {
  std::string b = "<h1>stet probe</h1>";
  b += "<p class=\"verdict" + std::string(r.exit_code == 0 ? "" : " bad") + "\">" +
       XmlEscape(r.verdict) + "</p>";
  for (const auto& n : r.notes) b += "<p class=\"note\">" + XmlEscape(n) + "</p>";
  const json req = r.options.request.ToJson();
  b += "<table><tr><th>endpoint</th>" + Td("<code>" + XmlEscape(r.options.endpoint) + "</code>") +
       "</tr>" + "<tr><th>model</th>" + Td(XmlEscape(r.options.request.model)) + "</tr>" +
       "<tr><th>when (UTC)</th>" + Td(XmlEscape(r.timestamp)) + "</tr>" +
       "<tr><th>runs per level</th>" + Td(std::to_string(r.options.runs)) + "</tr>" +
       "<tr><th>companion traffic</th>" + Td(r.options.companion ? "yes" : "no") + "</tr>" +
       "<tr><th>request</th>" + Td("<pre>" + XmlEscape(req.dump(2)) + "</pre>") + "</tr></table>";

  std::vector<Point> pts;
  for (const LevelResult& lr : r.levels)
    pts.push_back({std::to_string(lr.concurrency), static_cast<double>(lr.analysis.distinct())});
  b += SvgLinePlot("Distinct outputs vs concurrency", "concurrency (requests in flight)",
                   "distinct outputs", pts, 2);
  b += SvgHistogram(
      std::string("First divergence position (") + (r.logprobs_used ? "token" : "byte") + ")",
      r.logprobs_used ? "token index of the fork vs the most common output"
                      : "byte offset of the fork",
      r.overall.ForkPositions(), 20);

  b += "<h2>Per level</h2><table><tr><th>concurrency</th><th>probe / companion "
       "workers</th><th>answers</th>"
       "<th>errors</th><th>distinct outputs</th><th>distinct logprob "
       "traces</th><th>system_fingerprint</th>"
       "<th>companion requests</th><th>seconds</th></tr>";
  for (const LevelResult& lr : r.levels) {
    std::string fps;
    for (const auto& f : lr.analysis.fingerprints) fps += (fps.empty() ? "" : ", ") + f;
    b +=
        "<tr>" + Td(std::to_string(lr.concurrency)) +
        Td(std::to_string(lr.probe_workers) + " / " + std::to_string(lr.companion_workers)) +
        Td(std::to_string(lr.runs.size())) + Td(std::to_string(lr.errors)) +
        Td(std::to_string(lr.analysis.distinct())) +
        Td(lr.analysis.has_logprobs ? std::to_string(lr.analysis.distinct_logprob_traces) : "n/a") +
        Td(XmlEscape(fps.empty() ? "(none sent)" : fps)) +
        Td(std::to_string(lr.companion_requests) +
           (lr.companion_errors ? " (" + std::to_string(lr.companion_errors) + " failed)" : "")) +
        Td(FormatDouble(lr.seconds, 3)) + "</tr>";
  }
  b += "</table>";
  for (const LevelResult& lr : r.levels) {
    b += "<h2>Concurrency " + std::to_string(lr.concurrency) + "</h2>";
    for (const auto& e : lr.error_messages)
      b += "<p class=\"note\">error: " + XmlEscape(e) + "</p>";
    b += VariantTable(lr.analysis);
  }
  b += "<h2>All levels pooled</h2>" + VariantTable(r.overall);
  return HtmlPage("stet probe: " + r.options.request.model, b);
}

std::string ProbeSummary(const ProbeResult& r) {
  std::string s;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-12s %8s %7s %9s %14s  %s\n", "concurrency", "answers", "errors",
                "distinct", "logprob-traces", "first fork");
  s += buf;
  for (const LevelResult& lr : r.levels) {
    const auto f = lr.analysis.EarliestFork();
    std::snprintf(buf, sizeof buf, "%-12d %8zu %7d %9d %14s  %s\n", lr.concurrency, lr.runs.size(),
                  lr.errors, lr.analysis.distinct(),
                  lr.analysis.has_logprobs
                      ? std::to_string(lr.analysis.distinct_logprob_traces).c_str()
                      : "n/a",
                  f ? (ForkWhere(*f) + ", " + DescribeGap(*f)).c_str() : "-");
    s += buf;
  }
  s += "verdict: " + r.verdict + "\n";
  for (const auto& n : r.notes) s += "note: " + n + "\n";
  return s;
}

}  // namespace stet::forensics
