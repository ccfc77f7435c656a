// `stet eval`: thin CLI over forensics::RunEval / CompareResults. The results
// directory holds results.json (every run, with what shaped it) and report.html.
#include "tools/forensics/cmd_eval.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "forensics/analysis/eval.h"
#include "tools/common.h"
#include "tools/forensics/forensics_cli.h"

namespace stet::tools {

namespace {

struct EvalArgs : EndpointArgs {
  std::string dataset;
  int repeats = 5;
  std::string metric = "exact";
  double temperature = 0;
  std::string seed_policy = "fixed";
  int64_t seed = 0;
  int max_tokens = 64;
  std::string out = "stet-eval";
  int bootstrap = 10000;
  uint64_t bootstrap_seed = 0;
};

struct CompareArgs {
  std::string a, b;
  std::string json_out;
  int bootstrap = 10000;
  uint64_t bootstrap_seed = 0;
};

void EvalOptions(CLI::App* cmd, EvalArgs* a) {
  cmd->description(
      "Run every dataset item several times against an OpenAI-compatible endpoint: per-item "
      "pass rates, mean with 95% confidence intervals, flaky items; writes DIR/results.json and "
      "DIR/report.html. `stet eval compare A.json B.json` compares two runs.");
  AddEndpointArgs(cmd, a, "Base URL, e.g. http://127.0.0.1:8080", "Model name to send",
                  "Requests in flight");
  cmd->add_option(
      "--dataset", a->dataset,
      "JSONL: {\"id\", \"prompt\" or \"messages\", \"expected\"[, \"metric\", \"max_tokens\"]}");
  cmd->add_option("--repeats", a->repeats, "Runs per item")->capture_default_str();
  cmd->add_option("--metric", a->metric,
                  "exact | contains | regex | json (per-item \"metric\" overrides)")
      ->capture_default_str();
  cmd->add_option("--temperature", a->temperature, "Sampling temperature")->capture_default_str();
  cmd->add_option("--seed-policy", a->seed_policy,
                  "fixed: --seed every run; per-repeat: --seed + repeat index; none: send no seed")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Base seed")->capture_default_str();
  cmd->add_option("--max-tokens", a->max_tokens,
                  "Tokens per completion (per-item \"max_tokens\" overrides)")
      ->capture_default_str();
  cmd->add_option("--out", a->out, "Output directory")->capture_default_str();
  cmd->add_option("--bootstrap", a->bootstrap, "Bootstrap resamples")->capture_default_str();
  cmd->add_option("--bootstrap-seed", a->bootstrap_seed,
                  "Bootstrap seed (reports are reproducible)")
      ->capture_default_str();
}

void CompareOptions(CLI::App* compare, CompareArgs* c) {
  compare->description(
      "Paired comparison of two `stet eval` results files over their shared items: "
      "B - A with a paired-bootstrap 95% CI, exact sign test and McNemar test.");
  compare->add_option("a", c->a, "Results file A (baseline)")->required();
  compare->add_option("b", c->b, "Results file B (candidate)")->required();
  compare->add_option("--json", c->json_out, "Write the comparison as JSON");
  compare->add_option("--bootstrap", c->bootstrap, "Bootstrap resamples")->capture_default_str();
  compare->add_option("--bootstrap-seed", c->bootstrap_seed, "Bootstrap seed")
      ->capture_default_str();
}

int RunEvalCmd(const EvalArgs& a) {
  if (a.endpoint.empty() || a.model.empty() || a.dataset.empty()) {
    return Fail(InvalidArgument("stet eval needs --endpoint, --model and --dataset"));
  }
  auto metric = forensics::ParseMetric(a.metric);
  if (!metric.ok()) return Fail(metric.status());
  auto policy = forensics::ParseSeedPolicy(a.seed_policy);
  if (!policy.ok()) return Fail(policy.status());
  auto items = forensics::LoadDataset(a.dataset, *metric);
  if (!items.ok()) return Fail(items.status());
  std::error_code ec;
  std::filesystem::create_directories(a.out, ec);
  if (ec) return Fail(IoError("cannot create '" + a.out + "': " + ec.message()));

  forensics::EvalOptions o;
  a.CopyTo(&o);
  o.dataset = a.dataset;
  o.repeats = a.repeats;
  o.metric = *metric;
  o.temperature = a.temperature;
  o.seed_policy = *policy;
  o.seed = a.seed;
  o.max_tokens = a.max_tokens;
  o.bootstrap_resamples = a.bootstrap;
  o.bootstrap_seed = a.bootstrap_seed;
  auto doc = forensics::RunEval(o, *items);
  if (!doc.ok()) return Fail(doc.status());
  const std::string results = (std::filesystem::path(a.out) / "results.json").string();
  const std::string report = (std::filesystem::path(a.out) / "report.html").string();
  Status st = forensics::WriteTextFile(results, doc->dump(2) + "\n");
  if (!st.ok()) return Fail(st);
  st = forensics::WriteTextFile(report, forensics::EvalToHtml(*doc));
  if (!st.ok()) return Fail(st);
  std::fputs(forensics::EvalSummaryText(*doc).c_str(), stdout);
  std::printf("wrote %s and %s\n", results.c_str(), report.c_str());
  const int64_t errors = (*doc)["summary"]["errors"].get<int64_t>();
  if (errors > 0) {
    std::fprintf(stderr, "stet: error: %lld request(s) failed (recorded in %s, not scored)\n",
                 static_cast<long long>(errors), results.c_str());
    return kExitFailed;
  }
  return kExitOk;
}

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  STET_ASSIGN_OR_RETURN(std::string text, forensics::ReadTextFile(path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return InvalidArgument("'" + path + "' is not JSON");
  return j;
}

int RunCompareCmd(const CompareArgs& c) {
  if (c.bootstrap < 100) return Fail(InvalidArgument("--bootstrap must be at least 100"));
  auto a = ReadJsonFile(c.a);
  if (!a.ok()) return Fail(a.status());
  auto b = ReadJsonFile(c.b);
  if (!b.ok()) return Fail(b.status());
  auto cmp = forensics::CompareResults(*a, *b, c.bootstrap, c.bootstrap_seed);
  if (!cmp.ok()) return Fail(cmp.status());
  std::printf("A: %s\nB: %s\n", c.a.c_str(), c.b.c_str());
  std::fputs(forensics::CompareSummaryText(*cmp).c_str(), stdout);
  Status st = WriteIfNamed(c.json_out, [&] { return cmp->dump(2) + "\n"; });
  if (!st.ok()) return Fail(st);
  return kExitOk;
}

}  // namespace

CLI::App* AddEvalCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd = AddCommand(app, exit_code, "eval", EvalOptions, RunEvalCmd);

  AddCommand(*cmd, exit_code, "compare", CompareOptions, RunCompareCmd);
  return cmd;
}

}  // namespace stet::tools
