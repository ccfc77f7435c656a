// Reports of a canary analysis: a text table (one row per round), JSON, and a
// self-contained HTML page with the p-value and the statistic over time
// (svg.cc's charts) and the rounds' fingerprints, models and flags.
#include <cmath>
#include <cstdio>

#include "forensics/analysis/canary.h"
#include "forensics/analysis/svg.h"

namespace stet::forensics {

namespace {

std::string Join(const std::vector<std::string>& v, const char* sep = ",") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string Num(double v, const char* fmt = "%.4g") {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

const char* kTestText =
    "Test: per tested round, the positions where every baseline and round run chose the same top-1 "
    "token; "
    "statistic T = mean over positions of |mean top-1 logprob of the round's runs - mean of the "
    "baseline runs|; "
    "p = share of all ways to pick that many runs from the pool with T at least as large (exact "
    "permutation "
    "test; Monte Carlo past the enumeration limit). Flagged: p <= alpha, a system_fingerprint or "
    "answered model "
    "no baseline run had, or a greedy token every baseline run chose left by most of the round's "
    "runs.";

}  // namespace

std::string CanaryText(const CanaryAnalysis& a) {
  std::string s = "canary set " + a.set + ": " + std::to_string(a.total_runs) +
                  " runs, baseline = first " + std::to_string(a.baseline_runs) + ", alpha " +
                  Num(a.alpha) + "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-6s %-24s %4s %9s %10s %8s  %-18s %s\n", "round", "time",
                "runs", "positions", "T", "p", "fingerprint", "flags");
  s += line;
  for (const CanaryCheck& c : a.rounds) {
    std::snprintf(line, sizeof line, "%-6d %-24s %4d %9d %10s %8s  %-18s %s\n", c.round,
                  c.time.c_str(), c.runs, c.positions, Num(c.statistic).c_str(),
                  Num(c.p_value).c_str(), Join(c.fingerprints).c_str(),
                  c.baseline        ? "(baseline)"
                  : c.flags.empty() ? "-"
                                    : Join(c.flags).c_str());
    s += line;
    for (const auto& n : c.notes) s += "       note: " + n + "\n";
  }
  s += "drift: " + std::to_string(a.flagged) + " of " + std::to_string(a.tested) +
       " tested round(s) flagged\n";
  return s;
}

nlohmann::json CanaryJson(const CanaryAnalysis& a) {
  using J = nlohmann::json;
  J j = {{"set", a.set},
         {"baseline_runs", a.baseline_runs},
         {"total_runs", a.total_runs},
         {"alpha", a.alpha},
         {"tested", a.tested},
         {"flagged", a.flagged},
         {"test", kTestText}};
  J rounds = J::array();
  for (const CanaryCheck& c : a.rounds) {
    rounds.push_back({{"round", c.round},
                      {"time", c.time},
                      {"runs", c.runs},
                      {"baseline", c.baseline},
                      {"fingerprints", c.fingerprints},
                      {"models", c.models},
                      {"positions", c.positions},
                      {"statistic", std::isnan(c.statistic) ? J() : J(c.statistic)},
                      {"p_value", std::isnan(c.p_value) ? J() : J(c.p_value)},
                      {"permutations", c.permutations},
                      {"exact", c.exact},
                      {"mean_top1_logprob", std::isnan(c.mean_top1) ? J() : J(c.mean_top1)},
                      {"flags", c.flags},
                      {"notes", c.notes}});
  }
  j["rounds"] = std::move(rounds);
  return j;
}

std::string CanaryHtml(const CanaryAnalysis& a) {
  std::vector<Point> pvals, stats;
  for (const CanaryCheck& c : a.rounds) {
    if (c.baseline || std::isnan(c.p_value)) continue;
    pvals.push_back({std::to_string(c.round), c.p_value});
    stats.push_back({std::to_string(c.round), c.statistic});
  }
  std::string body = "<h1>Canary drift: set " + XmlEscape(a.set) + "</h1>";
  body += "<p>" + std::to_string(a.total_runs) + " runs; baseline: the first " +
          std::to_string(a.baseline_runs) + "; alpha " + XmlEscape(Num(a.alpha)) + "; <b>" +
          std::to_string(a.flagged) + " of " + std::to_string(a.tested) +
          " tested rounds flagged</b>.</p><p>" + XmlEscape(kTestText) + "</p>";
  body += SvgLinePlot("p-value per round (flag at p <= " + Num(a.alpha) + ")", "round", "p", pvals,
                      1.0);
  body += SvgLinePlot("T: mean |top-1 logprob shift| per round", "round", "nats", stats, 1e-6);
  body +=
      "<table><tr><th>round</th><th>time</th><th>runs</th><th>fingerprint</th><th>model</"
      "th><th>positions</th>"
      "<th>T</th><th>p</th><th>flags</th><th>notes</th></tr>";
  for (const CanaryCheck& c : a.rounds) {
    const bool flagged = !c.flags.empty();
    body += std::string("<tr") + (flagged ? " class=\"flaky\"" : "") + "><td>" +
            std::to_string(c.round) + "</td><td>" + XmlEscape(c.time) + "</td><td>" +
            std::to_string(c.runs) + "</td><td>" + XmlEscape(Join(c.fingerprints, ", ")) +
            "</td><td>" + XmlEscape(Join(c.models, ", ")) + "</td><td>" +
            std::to_string(c.positions) + "</td><td>" + XmlEscape(Num(c.statistic)) + "</td><td>" +
            XmlEscape(Num(c.p_value)) + "</td><td>" +
            (c.baseline ? "baseline"
             : flagged  ? "<b>" + XmlEscape(Join(c.flags, ", ")) + "</b>"
                        : "-") +
            "</td><td>" + XmlEscape(Join(c.notes, "; ")) + "</td></tr>";
  }
  body += "</table>";
  return HtmlPage("stet drift report: " + a.set, body);
}

}  // namespace stet::forensics
