// `stet drift watch --endpoint URL --canary prompts.txt --store STORE --every 1h`
// sends the canary prompt set each interval, records it, and prints the
// round's test (src/forensics/analysis/canary.h); `stet drift report STORE [--html]`
// recomputes the test over every stored round. Exit codes: 0 nothing flagged,
// 1 a round flagged, 2 error or bad command line.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "forensics/analysis/canary.h"
#include "forensics/client/openai.h"
#include "tools/common.h"
#include "tools/forensics/cmd_drift.h"
#include "tools/forensics/forensics_cli.h"
#include "tools/range_option.h"

namespace stet::tools {

namespace {

constexpr int kExitFlagged = 1;

struct WatchArgs {
  std::string endpoint, api_key, model, canary, store, every = "1h", api = "chat";
  int rounds = 0;
  int max_tokens = 16, top_logprobs = 5, repeats = 3, baseline_runs = 9;
  double alpha = 0.01, timeout_s = 300;
  std::string html, json;
  std::string set;
};

Result<forensics::CanaryAnalysis> Analyze(forensics::ExchangeStore& store, const WatchArgs& a) {
  std::vector<forensics::ExchangeJson> records;
  forensics::ExchangeQuery q;
  q.kind = "canary";
  STET_RETURN_IF_ERROR(store.ForEach(q, [&](const forensics::ExchangeJson& r) -> Status {
    records.push_back(r);
    return Status::Ok();
  }));
  forensics::CanaryTestOptions t;
  t.baseline_runs = a.baseline_runs;
  t.alpha = a.alpha;
  t.set = a.set;
  return forensics::AnalyzeCanary(records, t);
}

int WriteReports(const forensics::CanaryAnalysis& an, const WatchArgs& a) {
  Status st = WriteIfNamed(a.html, [&] { return forensics::CanaryHtml(an); });
  if (!st.ok()) return Fail(st);
  st = WriteIfNamed(a.json, [&] { return forensics::CanaryJson(an).dump(2) + "\n"; });
  if (!st.ok()) return Fail(st);
  return kExitOk;
}

int RunWatch(const WatchArgs& a) {
  const int64_t every = ParseDurationSeconds(a.every);
  if (every < 0)
    return Fail(
        InvalidArgument("--every '" + a.every + "': use a count and a unit, e.g. 1h, 15m, 30s"));
  auto prompts = forensics::LoadDriftPrompts(a.canary);
  if (!prompts.ok()) return Fail(prompts.status());
  auto store = forensics::ExchangeStore::Open(a.store, forensics::ExchangeStore::Mode::kCreate);
  if (!store.ok()) return Fail(store.status());
  forensics::CanaryOptions o;
  o.endpoint = a.endpoint;
  o.api_key = ApiKeyOrEnv(a.api_key);
  o.model = a.model;
  o.api = a.api;
  o.max_tokens = a.max_tokens;
  o.top_logprobs = a.top_logprobs;
  o.repeats = a.repeats;
  o.baseline_runs = a.baseline_runs;
  o.limits.timeout_ms = TimeoutMs(a.timeout_s);
  WatchArgs analysis_args = a;
  analysis_args.set = forensics::CanarySetId(*prompts, o);
  bool flagged = false;
  for (int done = 0; a.rounds == 0 || done < a.rounds; ++done) {
    const auto start = std::chrono::steady_clock::now();
    auto round = forensics::RunCanaryRound(**store, o, *prompts);
    if (!round.ok()) return Fail(round.status());
    auto an = Analyze(**store, analysis_args);
    if (!an.ok()) return Fail(an.status());
    const forensics::CanaryCheck& c = an->rounds.back();
    std::string flags;
    for (const auto& f : c.flags) flags += (flags.empty() ? "" : ",") + f;
    std::fprintf(
        stdout, "round %d: %d run(s), %d request(s) (%d failed), %s; %s\n", round->round,
        round->runs, round->requests, round->failed,
        c.baseline
            ? "baseline"
            : ("T " + std::to_string(c.statistic) + ", p " + std::to_string(c.p_value)).c_str(),
        c.baseline      ? "not tested"
        : flags.empty() ? "no drift"
                        : ("FLAGGED: " + flags).c_str());
    for (const auto& n : c.notes) std::fprintf(stdout, "  note: %s\n", n.c_str());
    std::fflush(stdout);
    flagged |= !c.flags.empty();
    if (int rc = WriteReports(*an, analysis_args); rc != kExitOk) return rc;
    if (a.rounds != 0 && done + 1 >= a.rounds) break;
    std::this_thread::sleep_until(start + std::chrono::seconds(every));
  }
  return flagged ? kExitFlagged : kExitOk;
}

int RunReport(const WatchArgs& a) {
  auto store =
      forensics::ExchangeStore::Open(a.store, forensics::ExchangeStore::Mode::kOpenExisting);
  if (!store.ok()) return Fail(store.status());
  auto an = Analyze(**store, a);
  if (!an.ok()) return Fail(an.status());
  std::fputs(forensics::CanaryText(*an).c_str(), stdout);
  if (int rc = WriteReports(*an, a); rc != kExitOk) return rc;
  return an->flagged > 0 ? kExitFlagged : kExitOk;
}

void TestOptions(CLI::App* cmd, WatchArgs& a) {
  AddRangeOption(cmd, "--baseline-runs", &a.baseline_runs,
                 "Runs of the prompt set that form the baseline (the first ones)", 2, 1000);
  AddRangeOption(cmd, "--alpha", &a.alpha, "Flag a round whose permutation p-value is at most this",
                 1e-9, 0.5);
  cmd->add_option("--html", a.html,
                  "Write the report (p-value and shift over time, every round) as HTML");
  cmd->add_option("--json", a.json, "Write the analysis as JSON");
}

void WatchOptions(CLI::App* watch, WatchArgs* w) {
  watch->description(
      "Canary drift monitoring: every --every, send the --canary prompt set "
      "greedily with logprobs (--repeats runs; "
      "the first round --baseline-runs), record every exchange in --store "
      "(kind canary), and test the round "
      "against the baseline: new system_fingerprint or answered model, a "
      "greedy token the baseline always chose "
      "left, or a top-1 logprob shift (exact permutation test, --alpha). "
      "Exit 1 when a round was flagged.");
  EndpointFlags flags = AddEndpointFlags(
      watch, &w->endpoint, &w->api_key, &w->model, "Base URL of the endpoint", "Model name to send",
      "Bearer API key (default: $OPENAI_API_KEY; never recorded)");
  flags.endpoint->required();
  flags.model->required();
  watch
      ->add_option("--canary", w->canary,
                   "Prompt set: JSONL {\"id\", \"prompt\"} or one prompt per line")
      ->required();
  watch->add_option("--store", w->store, "Exchange store: SQLite file or postgresql:// URL")
      ->required();
  watch->add_option("--every", w->every, "Interval between rounds (e.g. 1h, 15m, 30s)")
      ->capture_default_str();
  AddRangeOption(watch, "--rounds", &w->rounds, "Stop after this many rounds (0: run until killed)",
                 0, 1000000);
  watch->add_option("--api", w->api, "chat or completions")
      ->capture_default_str()
      ->check(CLI::IsMember({"chat", "completions"}));
  AddRangeOption(watch, "--max-tokens", &w->max_tokens, "Greedy tokens per prompt", 1, 4096);
  AddRangeOption(watch, "--top-logprobs", &w->top_logprobs, "Alternatives per position", 1, 20);
  AddRangeOption(watch, "--repeats", &w->repeats, "Runs of the prompt set per round", 1, 1000);
  watch->add_option("--timeout", w->timeout_s, "Seconds to wait for an answer")
      ->capture_default_str();
  TestOptions(watch, *w);
}

void ReportOptions(CLI::App* report, WatchArgs* r) {
  report->description(
      "Recompute the canary test over every round stored in STORE and print a table; --html plots "
      "the "
      "p-value and the top-1 logprob shift over time. Exit 1 when a round is flagged.");
  report->add_option("store", r->store, "Exchange store (SQLite file or postgresql:// URL)")
      ->required();
  report->add_option("--set", r->set, "Canary set id (default: the latest canary's)");
  TestOptions(report, *r);
}

}  // namespace

void AddDriftWatchCommands(CLI::App* drift, int* exit_code) {
  AddCommand(*drift, exit_code, "watch", WatchOptions, RunWatch);
  AddCommand(*drift, exit_code, "report", ReportOptions, RunReport);
}

}  // namespace stet::tools
