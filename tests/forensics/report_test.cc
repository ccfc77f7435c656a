// Reports are well-formed XML (checked by a small strict parser below: nested
// and closed tags, quoted attributes, only known entities) with the expected
// structure; eval scoring, summaries and A/B comparison; drift comparison.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <regex>

#include "forensics/analysis/divergence.h"
#include "forensics/analysis/drift.h"
#include "forensics/analysis/eval.h"
#include "forensics/analysis/probe.h"
#include "forensics/analysis/svg.h"

namespace stet::forensics {
namespace {

using nlohmann::json;

// Returns "" when `doc` is well-formed XML (a DOCTYPE line allowed), else the problem.
std::string XmlProblem(const std::string& doc, std::vector<std::string>* tags_seen = nullptr) {
  std::vector<std::string> stack;
  int roots = 0;
  size_t i = 0;
  auto entity_ok = [&](size_t p) {
    static const std::regex re("^&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);");
    return std::regex_search(doc.begin() + p, doc.begin() + std::min(doc.size(), p + 12), re);
  };
  while (i < doc.size()) {
    if (doc[i] == '&') {
      if (!entity_ok(i)) return "bad entity at " + std::to_string(i);
      ++i;
      continue;
    }
    if (doc[i] == '>') return "stray '>' in text at " + std::to_string(i);
    if (doc[i] != '<') {
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(doc[i]))) {
        return "text outside the root at " + std::to_string(i);
      }
      ++i;
      continue;
    }
    if (doc.compare(i, 9, "<!DOCTYPE") == 0) {
      i = doc.find('>', i);
      if (i == std::string::npos) return "unterminated DOCTYPE";
      ++i;
      continue;
    }
    if (doc.compare(i, 4, "<!--") == 0) {
      i = doc.find("-->", i);
      if (i == std::string::npos) return "unterminated comment";
      i += 3;
      continue;
    }
    const bool closing = doc[i + 1] == '/';
    size_t p = i + (closing ? 2 : 1);
    size_t name_end = p;
    while (name_end < doc.size() && (std::isalnum(static_cast<unsigned char>(doc[name_end])) ||
                                     doc[name_end] == '-' || doc[name_end] == ':'))
      ++name_end;
    const std::string name = doc.substr(p, name_end - p);
    if (name.empty()) return "empty tag name at " + std::to_string(i);
    p = name_end;
    if (closing) {
      if (doc[p] != '>') return "malformed closing tag " + name;
      if (stack.empty() || stack.back() != name) {
        return "</" + name + "> closes " +
               (stack.empty() ? std::string("nothing") : "<" + stack.back() + ">");
      }
      stack.pop_back();
      i = p + 1;
      continue;
    }
    // Attributes: name="value" (no '<' or stray '&' in values).
    for (;;) {
      while (p < doc.size() && std::isspace(static_cast<unsigned char>(doc[p]))) ++p;
      if (p >= doc.size()) return "unterminated tag " + name;
      if (doc[p] == '>' || doc.compare(p, 2, "/>") == 0) break;
      size_t a = p;
      while (p < doc.size() &&
             (std::isalnum(static_cast<unsigned char>(doc[p])) || doc[p] == '-' || doc[p] == ':'))
        ++p;
      if (a == p || doc[p] != '=' || (doc[p + 1] != '"' && doc[p + 1] != '\'')) {
        return "malformed attribute in <" + name + "> at " + std::to_string(p);
      }
      const char q = doc[p + 1];
      const size_t end = doc.find(q, p + 2);
      if (end == std::string::npos) return "unterminated attribute in <" + name + ">";
      for (size_t k = p + 2; k < end; ++k) {
        if (doc[k] == '<') return "'<' in attribute of <" + name + ">";
        if (doc[k] == '&' && !entity_ok(k)) return "bad entity in attribute of <" + name + ">";
      }
      p = end + 1;
    }
    if (stack.empty()) ++roots;
    if (tags_seen) tags_seen->push_back(name);
    if (doc[p] == '>') {
      stack.push_back(name);
      i = p + 1;
    } else {
      i = p + 2;  // self-closing
    }
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (roots != 1) return "expected one root element, found " + std::to_string(roots);
  return "";
}

TEST(XmlChecker, CatchesMistakes) {
  EXPECT_EQ(XmlProblem("<a><b x=\"1\"/>t &amp; u</a>"), "");
  EXPECT_NE(XmlProblem("<a><b></a></b>"), "");
  EXPECT_NE(XmlProblem("<a>x & y</a>"), "");
  EXPECT_NE(XmlProblem("<a x=1></a>"), "");
  EXPECT_NE(XmlProblem("<a></a><b></b>"), "");
  EXPECT_NE(XmlProblem("<a>"), "");
}

TEST(Svg, ChartsAreWellFormedAndEscaped) {
  const std::string evil = "<script>&\"'</script>";
  const std::string line = SvgLinePlot(evil, "x", "y", {{"1", 1}, {evil, 3}, {"32", 2}}, 2);
  EXPECT_EQ(XmlProblem(line), "") << line;
  EXPECT_EQ(line.find("<script>"), std::string::npos);
  EXPECT_NE(line.find("<polyline"), std::string::npos);
  const std::string hist = SvgHistogram("h", "pos", {0, 3, 3, 17, 40, 40, 40}, 10);
  std::vector<std::string> tags;
  EXPECT_EQ(XmlProblem(hist, &tags), "") << hist;
  EXPECT_GE(std::count(tags.begin(), tags.end(), "rect"), 5);
  EXPECT_EQ(XmlProblem(SvgHistogram("empty", "pos", {}, 10)), "");
  const std::string bars =
      SvgBars("b", "rate", {{evil, 0.5, 0.2, 0.8, true}, {"x", 1.5, -1, -1, false}});
  EXPECT_EQ(XmlProblem(bars), "") << bars;
  EXPECT_NE(bars.find("class=\"warn\""), std::string::npos);
  EXPECT_EQ(XmlProblem(SvgBars("none", "rate", {})), "");
  EXPECT_EQ(XmlEscape(std::string("a\x01"
                                  "b")),
            "a\xEF\xBF\xBD"
            "b");  // control chars are not XML
}

Completion Tok(const std::string& a, const std::string& b, double lpb) {
  Completion c;
  c.has_logprobs = true;
  c.text = a + b;
  c.tokens = {{a, -0.1, {{a, -0.1}}}, {b, lpb, {{" x", -0.5}, {" y", -0.52}}}};
  return c;
}

TEST(ProbeReport, HtmlAndJson) {
  ProbeResult r;
  r.options.endpoint = "http://127.0.0.1:1";
  r.options.request.model = "m<&>";
  r.options.request.prompt = "say <b>hi</b> & bye";
  r.options.runs = 3;
  r.logprobs_used = true;
  std::vector<Completion> all;
  for (int c : {1, 8}) {
    LevelResult lr;
    lr.concurrency = c;
    lr.runs = {Tok("A", " x", -0.5), Tok("A", c == 1 ? " x" : " y", c == 1 ? -0.5 : -0.52),
               Tok("A", " x", -0.5)};
    lr.analysis = AnalyzeRuns(lr.runs);
    all.insert(all.end(), lr.runs.begin(), lr.runs.end());
    r.levels.push_back(lr);
  }
  r.overall = AnalyzeRuns(all);
  Judge(&r);
  EXPECT_EQ(r.exit_code, 1);
  const std::string html = ProbeToHtml(r);
  std::vector<std::string> tags;
  const size_t root = html.find("<html");
  ASSERT_NE(root, std::string::npos);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(XmlProblem(html.substr(root), &tags), "");
  EXPECT_EQ(std::count(tags.begin(), tags.end(), "svg"),
            2);  // distinct-vs-concurrency, fork histogram
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>hi"), std::string::npos);  // user text is escaped
  EXPECT_NE(html.find("class=\"fork\""), std::string::npos);
  const json j = ProbeToJson(r);
  EXPECT_EQ(j["levels"].size(), 2u);
  EXPECT_EQ(j["levels"][1]["analysis"]["distinct_outputs"], 2);
  EXPECT_EQ(j["levels"][1]["analysis"]["variants"][1]["fork"]["token_index"], 1);
  EXPECT_NEAR(j["levels"][1]["analysis"]["variants"][1]["fork"]["gap_reference"].get<double>(),
              0.02, 1e-9);
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_NE(ProbeSummary(r).find("verdict: nondeterministic"), std::string::npos);
}

EvalItem Item(Metric m, json expected) {
  EvalItem it;
  it.id = "i";
  it.prompt = "p";
  it.metric = m;
  it.expected = std::move(expected);
  return it;
}

TEST(Eval, Metrics) {
  EXPECT_TRUE(Score(Item(Metric::kExact, "Paris"), "  Paris\n"));
  EXPECT_FALSE(Score(Item(Metric::kExact, "Paris"), "Paris."));
  EXPECT_TRUE(Score(Item(Metric::kContains, "Paris"), "It is Paris."));
  EXPECT_FALSE(Score(Item(Metric::kContains, "paris"), "It is Paris."));
  EXPECT_TRUE(Score(Item(Metric::kRegex, "\\b4\\b"), "The answer is 4."));
  EXPECT_FALSE(Score(Item(Metric::kRegex, "\\b4\\b"), "The answer is 42."));
  EXPECT_TRUE(Score(Item(Metric::kRegex, "^caf\u00e9$"), "caf\u00e9"));  // UTF-8 aware
  EXPECT_TRUE(Score(Item(Metric::kJson, json{{"a", 1}}), "Sure! ```json\n{\"a\": 1}\n```"));
  EXPECT_TRUE(Score(Item(Metric::kJson, json{{"a", 1}}), "Here: {\"a\": 1} done"));
  EXPECT_FALSE(Score(Item(Metric::kJson, json{{"a", 1}}), "{\"a\": 2}"));
  EXPECT_TRUE(Score(Item(Metric::kJson, json::array({1, 2})), "[1, 2]"));
  EXPECT_FALSE(ExtractJson("no json {here").has_value());
  EXPECT_EQ(*ExtractJson("x {\"s\": \"}{\"} y"), (json{{"s", "}{"}}));  // braces inside strings
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(Eval, DatasetLoading) {
  auto ok = LoadDataset(
      WriteTemp("ok.jsonl",
                "{\"id\": \"a\", \"prompt\": \"p\", \"expected\": \"x\"}\n\n"
                "{\"id\": 2, \"messages\": [{\"role\": \"user\", \"content\": \"q\"}], "
                "\"expected\": \"{\\\"k\\\": [1]}\", \"metric\": \"json\", \"max_tokens\": 5}\n"),
      Metric::kContains);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[0].metric, Metric::kContains);
  EXPECT_EQ((*ok)[1].id, "2");
  EXPECT_EQ((*ok)[1].metric, Metric::kJson);
  EXPECT_EQ((*ok)[1].expected, (json{{"k", {1}}}));  // a JSON string expectation is parsed
  EXPECT_EQ(*(*ok)[1].max_tokens, 5);
  struct Bad {
    const char* text;
    const char* why;
  };
  for (const Bad& b :
       {Bad{"not json\n", "not a JSON object"},
        Bad{"{\"prompt\": \"p\", \"expected\": \"x\"}\n", "needs an \"id\""},
        Bad{"{\"id\": \"a\", \"expected\": \"x\"}\n", "needs \"prompt\""},
        Bad{"{\"id\": \"a\", \"prompt\": \"p\"}\n", "needs \"expected\""},
        Bad{"{\"id\": \"a\", \"prompt\": \"p\", \"expected\": \"x\"}\n{\"id\": \"a\", \"prompt\": "
            "\"p\", \"expected\": \"x\"}\n",
            "duplicate id"},
        Bad{"{\"id\": \"a\", \"prompt\": \"p\", \"expected\": \"(\", \"metric\": \"regex\"}\n",
            "regex does not compile"},
        Bad{"{\"id\": \"a\", \"prompt\": \"p\", \"expected\": \"x\", \"metric\": \"fuzzy\"}\n",
            "metric must be"},
        Bad{"", "holds no items"}}) {
    auto r = LoadDataset(WriteTemp("bad.jsonl", b.text), Metric::kExact);
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_NE(r.status().message().find(b.why), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(LoadDataset("/nonexistent/x.jsonl", Metric::kExact).ok());
}

// A results document as RunEval writes it, from per-item pass lists.
json Results(const std::vector<std::pair<std::string, std::vector<int>>>& items,
             const std::string& fp = "fp") {
  json d;
  d["tool"] = "stet eval";
  d["run"] = {{"model", "m"}, {"temperature", 0.0}, {"seed_policy", "fixed"}, {"concurrency", 1}};
  d["items"] = json::array();
  for (const auto& [id, passes] : items) {
    json it = {{"id", id}, {"metric", "exact"}, {"expected", "x"}, {"results", json::array()}};
    for (size_t r = 0; r < passes.size(); ++r) {
      if (passes[r] < 0)
        it["results"].push_back({{"repeat", r}, {"error", "IoError: refused"}});
      else
        it["results"].push_back({{"repeat", r},
                                 {"pass", passes[r] == 1},
                                 {"output", passes[r] ? "x" : "y"},
                                 {"fingerprint", fp}});
    }
    d["items"].push_back(it);
  }
  Summarize(&d, 1000, 0);
  return d;
}

TEST(Eval, SummaryFlakyAndIntervals) {
  json d = Results({{"a", {1, 1, 1, 1, 1}},
                    {"b", {0, 0, 0, 0, 0}},
                    {"c", {1, 0, 1, 1, -1}},
                    {"d", {1, 1, 1, 1, 0}}});
  const json& s = d["summary"];
  EXPECT_EQ(s["runs_scored"], 19);
  EXPECT_EQ(s["errors"], 1);
  EXPECT_EQ(s["passes"], 12);
  EXPECT_EQ(s["flaky"], json::array({"c", "d"}));
  EXPECT_DOUBLE_EQ(d["items"][2]["pass_rate"].get<double>(),
                   0.75);  // the errored run is not scored
  EXPECT_NEAR(s["pooled_rate"].get<double>(), 12.0 / 19, 1e-15);
  EXPECT_NEAR(s["mean_item_rate"].get<double>(), (1 + 0 + 0.75 + 0.8) / 4, 1e-15);
  EXPECT_LT(s["wilson95"][0].get<double>(), 12.0 / 19);
  EXPECT_GT(s["wilson95"][1].get<double>(), 12.0 / 19);
  EXPECT_LE(s["bootstrap95"][0].get<double>(), s["mean_item_rate"].get<double>());
  json again = d;
  Summarize(&again, 1000, 0);
  EXPECT_EQ(again["summary"], s);  // seeded: reproducible
  EXPECT_EQ(d["run"]["fingerprints"], json::array({"fp"}));
  const std::string html = EvalToHtml(d);
  std::vector<std::string> tags;
  EXPECT_EQ(XmlProblem(html.substr(html.find("<html")), &tags), "");
  EXPECT_EQ(std::count(tags.begin(), tags.end(), "svg"), 2);  // CI whiskers, per-item bars
  EXPECT_NE(EvalSummaryText(d).find("flaky items (2): c, d"), std::string::npos);
}

TEST(Eval, CompareVerdicts) {
  std::vector<std::pair<std::string, std::vector<int>>> a, b, same;
  for (int i = 0; i < 30; ++i) {
    const std::string id = "q" + std::to_string(i);
    a.push_back({id, {0, 0, 0, 0, 0}});
    b.push_back({id, i < 20 ? std::vector<int>{1, 1, 1, 1, 1} : std::vector<int>{0, 0, 0, 0, 0}});
    same.push_back({id, i % 2 ? std::vector<int>{1, 1, 1, 1, 1} : std::vector<int>{0, 0, 0, 0, 0}});
  }
  auto c = CompareResults(Results(a), Results(b, "fp2"), 2000, 0);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)["shared_items"], 30);
  EXPECT_NEAR((*c)["delta"].get<double>(), 20.0 / 30, 1e-12);
  EXPECT_EQ((*c)["mcnemar"]["pass_b_only"], 20);
  EXPECT_EQ((*c)["mcnemar"]["pass_a_only"], 0);
  // Exact: 2 * 0.5^20 (Python: 2 * Fraction(1, 2**20)) = 1.9073486328125e-06.
  EXPECT_NEAR((*c)["mcnemar"]["p_value"].get<double>(), 1.9073486328125e-06, 1e-18);
  EXPECT_EQ((*c)["verdict"].get<std::string>().rfind("B better by 0.667", 0), 0u)
      << (*c)["verdict"];
  bool fp_note = false;
  for (const auto& n : (*c)["notes"])
    fp_note = fp_note || n.get<std::string>().find("fingerprints differs") == 0;
  EXPECT_TRUE(fp_note);
  auto d = CompareResults(Results(same), Results(same), 2000, 0);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)["verdict"], "no detectable difference (\xCE\x94 = +0.000, 95% CI [0.000, 0.000])");
  auto worse = CompareResults(Results(b), Results(a), 2000, 0);
  EXPECT_EQ((*worse)["verdict"].get<std::string>().rfind("B worse by 0.667", 0), 0u);
  EXPECT_FALSE(CompareResults(Results({{"x", {1}}}), Results({{"y", {1}}}), 1000, 0).ok());
  EXPECT_FALSE(CompareResults(json{{"nope", 1}}, Results({{"y", {1}}}), 1000, 0).ok());
  EXPECT_NE(CompareSummaryText(*c).find("McNemar"), std::string::npos);
}

json Capture(const std::vector<std::vector<std::vector<std::pair<std::string, double>>>>& prompts) {
  json d = {{"tool", "stet drift"},
            {"schema", 1},
            {"top_k", 3},
            {"max_tokens", 4},
            {"fingerprints", json::array()}};
  d["prompts"] = json::array();
  int id = 0;
  for (const auto& positions : prompts) {
    json p = {{"id", std::to_string(id++)}, {"prompt", "p"}, {"positions", json::array()}};
    for (const auto& top : positions) {
      json t = json::array();
      for (const auto& [tok, lp] : top) t.push_back({tok, lp});
      p["positions"].push_back({{"token", top[0].first}, {"logprob", top[0].second}, {"top", t}});
    }
    d["prompts"].push_back(p);
  }
  return d;
}

TEST(Drift, IdenticalCapturesHaveZeroDrift) {
  const json a = Capture({{{{"a", -0.1}, {"b", -2.0}}, {{"c", -0.5}, {"d", -1.0}}}});
  auto c = CompareDrift(a, a, 0.0);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)["drift"], 0.0);
  EXPECT_EQ((*c)["top1_agreement"], 1.0);
  EXPECT_FALSE((*c)["exceeded"].get<bool>());
  EXPECT_TRUE((*c)["earliest_divergence"].is_null());
}

TEST(Drift, DistancesOnSharedSupportAndFirstDivergence) {
  // Position 0: same argmax; shared support {a, b}: p = (0.5, 0.5) vs q = (0.9, 0.1)
  // after renormalizing -> TV 0.4, KL(p||q) = 0.5 ln(25/9).
  const json base = Capture({{{{"a", std::log(0.4)}, {"b", std::log(0.4)}, {"z", std::log(0.2)}},
                              {{"c", -0.1}},
                              {{"e", -0.1}}}});
  const json now = Capture({{{{"a", std::log(0.45)}, {"b", std::log(0.05)}, {"y", std::log(0.5)}},
                             {{"d", -0.1}, {"c", -0.2}},
                             {{"f", -0.1}}}});
  auto c = CompareDrift(base, now, 0.05);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const json& row = (*c)["prompts"][0];
  EXPECT_EQ(row["first_divergence"], 1);  // "c" vs "d": comparison stops there
  EXPECT_EQ(row["positions_compared"], 2);
  EXPECT_EQ(row["tokens_at_divergence"], json::array({"c", "d"}));
  // Position 0's argmax: "a" (tie with "b" broken toward the smaller token) vs "y".
  EXPECT_DOUBLE_EQ((*c)["top1_agreement"].get<double>(), 0.0);
  EXPECT_NEAR(row["max_tv"].get<double>(), 0.4, 1e-12);
  // Position 1: shared {c}: both renormalize to (1) -> TV 0.
  EXPECT_NEAR((*c)["mean_tv"].get<double>(), 0.2, 1e-12);
  EXPECT_NEAR((*c)["mean_kl"].get<double>(), 0.5 * 0.5108256237659907, 1e-12);
  EXPECT_TRUE((*c)["exceeded"].get<bool>());
  EXPECT_NE(DriftSummaryText(*c).find("DRIFT"), std::string::npos);
}

TEST(Drift, DisjointSupportAndValidation) {
  const json a = Capture({{{{"a", -0.1}}}});
  const json b = Capture({{{{"b", -0.1}}}});
  auto c = CompareDrift(a, b, 0.5);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)["disjoint_positions"], 1);
  EXPECT_EQ((*c)["max_tv"], 1.0);
  EXPECT_TRUE((*c)["max_kl"].is_null());  // infinite
  json broken = a;
  broken["prompts"][0]["positions"][0]["top"][0] = "oops";
  EXPECT_FALSE(CompareDrift(broken, a, 0.1).ok());
  EXPECT_FALSE(ValidateCapture(json{{"tool", "other"}}, "x").ok());
  json other_text = a;
  other_text["prompts"][0]["prompt"] = "different";
  EXPECT_FALSE(CompareDrift(a, other_text, 0.1).ok());
}

TEST(Drift, PromptFiles) {
  auto plain = LoadDriftPrompts(WriteTemp("p.txt", "first prompt\n\nsecond {x}\r\n"));
  ASSERT_TRUE(plain.ok());
  ASSERT_EQ(plain->size(), 2u);
  EXPECT_EQ((*plain)[1].id, "3");
  EXPECT_EQ((*plain)[1].prompt, "second {x}");
  auto jl = LoadDriftPrompts(
      WriteTemp("p.jsonl", "{\"id\": \"k\", \"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n"));
  ASSERT_TRUE(jl.ok());
  EXPECT_EQ((*jl)[0].id, "k");
  EXPECT_EQ((*jl)[1].id, "2");
  EXPECT_FALSE(LoadDriftPrompts(WriteTemp("bad.jsonl", "{\"id\": \"k\"}\n")).ok());
  EXPECT_FALSE(LoadDriftPrompts(WriteTemp("empty.txt", "\n\n")).ok());
}

}  // namespace
}  // namespace stet::forensics
