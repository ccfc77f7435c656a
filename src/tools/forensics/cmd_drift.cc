// `stet drift`: thin CLI over forensics::CaptureDrift / CompareDrift. With
// --against, the second endpoint is the baseline and --endpoint the current.
#include "tools/forensics/cmd_drift.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <utility>

#include "forensics/analysis/drift.h"
#include "forensics/client/openai.h"
#include "tools/common.h"
#include "tools/forensics/forensics_cli.h"

namespace stet::tools {

namespace {

struct DriftArgs : EndpointArgs {
  std::string prompts;
  std::string baseline;
  std::string against;
  std::string against_model;
  std::string against_api_key;
  std::string save;
  std::string json_out;
  int top_k = 5;
  int max_tokens = 16;
  double threshold = 0.05;
};

void DriftOptions(CLI::App* cmd, DriftArgs* a) {
  cmd->description(
      "Capture greedy top-k logprobs over a fixed prompt set and compare them with a baseline "
      "file or a second endpoint: top-1 agreement, total variation and KL on the shared support, "
      "first divergence. Exit code: 0 within --threshold (or capture only), 1 over it, 2 error.");
  AddEndpointArgs(cmd, a, "Base URL of the endpoint to measure (required)",
                  "Model name to send (required)", "Requests in flight while capturing");
  cmd->add_option(
      "--prompts", a->prompts,
      "Prompt set: JSONL {\"id\", \"prompt\"} or one plain-text prompt per line (required)");
  auto* baseline =
      cmd->add_option("--baseline", a->baseline, "A capture saved earlier with --save");
  auto* against = cmd->add_option("--against", a->against, "Second endpoint (the baseline side)");
  baseline->excludes(against);
  cmd->add_option("--against-model", a->against_model,
                  "Model name for --against (default: --model)");
  cmd->add_option("--against-api-key", a->against_api_key,
                  "API key for --against (default: --api-key)");
  cmd->add_option("--save", a->save, "Save this capture (the --endpoint side) as a baseline file");
  cmd->add_option("--json", a->json_out, "Write the comparison as JSON");
  cmd->add_option("--top-k", a->top_k, "Logprobs per position")->capture_default_str();
  cmd->add_option("--max-tokens", a->max_tokens, "Greedy tokens per prompt")->capture_default_str();
  cmd->add_option("--threshold", a->threshold,
                  "Fail (exit 1) when max(1 - top-1 agreement, mean TV) exceeds this")
      ->capture_default_str();
}

constexpr int kExitDrift = 1;

int RunDriftCmd(const DriftArgs& a) {
  // Required here rather than by CLI11, so `stet drift watch|report` need none of them.
  for (const auto& [value, name] :
       {std::pair{&a.endpoint, "--endpoint"}, {&a.model, "--model"}, {&a.prompts, "--prompts"}}) {
    if (value->empty()) {
      std::fprintf(stderr, "%s is required\nRun with --help for more information.\n", name);
      return kExitFailed;
    }
  }
  if (!a.baseline.empty() && !a.against.empty()) {
    return Fail(InvalidArgument("give --baseline FILE or --against URL, not both"));
  }
  if (a.baseline.empty() && a.against.empty() && a.save.empty()) {
    return Fail(
        InvalidArgument("nothing to do: give --baseline FILE, --against URL, or --save FILE"));
  }
  if (a.threshold < 0) return Fail(InvalidArgument("--threshold must be >= 0"));
  auto prompts = forensics::LoadDriftPrompts(a.prompts);
  if (!prompts.ok()) return Fail(prompts.status());

  nlohmann::json baseline;
  if (!a.baseline.empty()) {  // read first: a bad baseline fails before any request
    auto text = forensics::ReadTextFile(a.baseline);
    if (!text.ok()) return Fail(text.status());
    baseline = nlohmann::json::parse(*text, nullptr, false);
    if (baseline.is_discarded()) return Fail(InvalidArgument("'" + a.baseline + "' is not JSON"));
    Status st = forensics::ValidateCapture(baseline, "'" + a.baseline + "'");
    if (!st.ok()) return Fail(st);
  }
  forensics::DriftCaptureOptions o;
  a.CopyTo(&o);
  o.top_k = a.top_k;
  o.max_tokens = a.max_tokens;
  if (!a.against.empty()) {
    forensics::DriftCaptureOptions b = o;
    b.endpoint = a.against;
    if (!a.against_model.empty()) b.model = a.against_model;
    if (!a.against_api_key.empty()) b.api_key = a.against_api_key;
    auto cap = forensics::CaptureDrift(b, *prompts);
    if (!cap.ok()) return Fail(cap.status());
    baseline = std::move(cap).value();
  }
  auto current = forensics::CaptureDrift(o, *prompts);
  if (!current.ok()) return Fail(current.status());
  if (!a.save.empty()) {
    Status st = forensics::WriteTextFile(a.save, current->dump(2) + "\n");
    if (!st.ok()) return Fail(st);
    std::fprintf(stderr, "stet: saved %zu prompt fingerprints to %s\n", prompts->size(),
                 a.save.c_str());
  }
  if (baseline.is_null()) return kExitOk;  // capture only
  auto cmp = forensics::CompareDrift(baseline, *current, a.threshold);
  if (!cmp.ok()) return Fail(cmp.status());
  std::fputs(forensics::DriftSummaryText(*cmp).c_str(), stdout);
  Status st = WriteIfNamed(a.json_out, [&] { return cmp->dump(2) + "\n"; });
  if (!st.ok()) return Fail(st);
  return (*cmp)["exceeded"].get<bool>() ? kExitDrift : kExitOk;
}

}  // namespace

CLI::App* AddDriftCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd = AddCommand(app, exit_code, "drift", DriftOptions, RunDriftCmd);
  AddDriftWatchCommands(cmd, exit_code);
  return cmd;
}

}  // namespace stet::tools
