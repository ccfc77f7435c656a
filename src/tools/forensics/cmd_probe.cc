// `stet probe`: thin CLI over forensics::RunProbe. stdout carries the summary
// table and verdict; stderr the progress bar and errors.
#include "tools/forensics/cmd_probe.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "forensics/analysis/probe.h"
#include "tools/common.h"
#include "tools/forensics/forensics_cli.h"

namespace stet::tools {

namespace {

struct ProbeArgs {
  std::string endpoint;
  std::string api_key;
  std::string model;
  std::string prompt;
  std::string messages_file;
  int runs = 10;
  std::vector<int> levels = {1, 8, 32};
  int max_tokens = 64;
  double temperature = 0;
  int64_t seed = 0;
  bool require_logprobs = false;
  bool no_logprobs = false;
  int top_logprobs = 5;
  bool no_companion = false;
  bool stream = false;
  double timeout_s = 300;
  std::string json_out;
  std::string html_out;
  // --seed and --prompt themselves: given or not decides, not their default values.
  const CLI::Option* seed_option = nullptr;
  const CLI::Option* prompt_option = nullptr;
};

void ProbeOptions(CLI::App* cmd, ProbeArgs* a) {
  cmd->description(
      "Send the same request N times at each concurrency level (with companion traffic so the "
      "server batches) and report distinct outputs, where they fork and how near the tie was. "
      "Works with any OpenAI-compatible endpoint. Exit code: 0 deterministic, 1 divergence "
      "found (in the text, or in any logprob bit when the endpoint gives logprobs), 2 error.");
  EndpointFlags flags = AddEndpointFlags(cmd, &a->endpoint, &a->api_key, &a->model,
                                         "Base URL, e.g. http://127.0.0.1:8080 (with or without "
                                         "/v1)",
                                         "Model name to send");
  flags.endpoint->required();
  flags.model->required();
  auto* prompt = cmd->add_option("-p,--prompt", a->prompt, "Prompt text: uses /v1/completions");
  auto* messages = cmd->add_option("--messages", a->messages_file,
                                   "JSON file with chat messages: uses /v1/chat/completions");
  prompt->excludes(messages);
  a->prompt_option = prompt;
  cmd->add_option("-n,--runs", a->runs, "Requests per concurrency level")->capture_default_str();
  cmd->add_option("-c,--concurrency", a->levels, "Concurrency levels, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--max-tokens", a->max_tokens, "Tokens per completion")->capture_default_str();
  cmd->add_option("--temperature", a->temperature, "Sampling temperature")->capture_default_str();
  a->seed_option = cmd->add_option("--seed", a->seed, "Seed to send (default: none)");
  cmd->add_flag("--logprobs", a->require_logprobs,
                "Require logprobs (top 5) and fail if the endpoint has none (default: use them "
                "when offered)");
  cmd->add_flag("--no-logprobs", a->no_logprobs, "Never ask for logprobs");
  cmd->add_option("--top-logprobs", a->top_logprobs, "Alternatives per position")
      ->capture_default_str();
  cmd->add_flag("--no-companion", a->no_companion,
                "No companion traffic: every worker repeats the probe request");
  cmd->add_flag("--stream", a->stream, "Use streaming (SSE) responses");
  cmd->add_option("--timeout", a->timeout_s, "Per-request timeout in seconds")
      ->capture_default_str();
  cmd->add_option("--json", a->json_out, "Write the full result as JSON");
  cmd->add_option("--html", a->html_out, "Write a self-contained HTML report (inline SVG plots)");
}

constexpr int kExitDiverged = 1;

int RunProbeCmd(const ProbeArgs& a) {
  forensics::ProbeOptions o;
  o.endpoint = a.endpoint;
  o.api_key = ApiKeyOrEnv(a.api_key);
  o.request.model = a.model;
  if (!a.messages_file.empty()) {
    auto m = forensics::LoadMessagesFile(a.messages_file);
    if (!m.ok()) return Fail(m.status());
    o.request.messages = *m;
  } else if (a.prompt_option->count() > 0) {
    o.request.prompt = a.prompt;
  } else {
    return Fail(InvalidArgument("give --prompt TEXT or --messages FILE"));
  }
  if (a.max_tokens < 1) return Fail(InvalidArgument("--max-tokens must be at least 1"));
  if (a.require_logprobs && a.no_logprobs)
    return Fail(InvalidArgument("--logprobs and --no-logprobs contradict"));
  o.request.max_tokens = a.max_tokens;
  o.request.temperature = a.temperature;
  if (a.seed_option->count() > 0) o.request.seed = a.seed;
  o.request.stream = a.stream;
  o.runs = a.runs;
  o.levels = a.levels;
  o.logprobs = a.no_logprobs        ? forensics::LogprobMode::kOff
               : a.require_logprobs ? forensics::LogprobMode::kRequire
                                    : forensics::LogprobMode::kAuto;
  o.top_logprobs = a.top_logprobs;
  o.companion = !a.no_companion;
  o.timeout_ms = TimeoutMs(a.timeout_s);
  auto r = forensics::RunProbe(o);
  if (!r.ok()) return Fail(r.status());
  std::fputs(forensics::ProbeSummary(*r).c_str(), stdout);
  Status st = WriteIfNamed(a.json_out, [&] { return forensics::ProbeToJson(*r).dump(2) + "\n"; });
  if (!st.ok()) return Fail(st);
  st = WriteIfNamed(a.html_out, [&] { return forensics::ProbeToHtml(*r); });
  if (!st.ok()) return Fail(st);
  return r->exit_code == 0 ? kExitOk : r->exit_code == 1 ? kExitDiverged : kExitFailed;
}

}  // namespace

CLI::App* AddProbeCommand(CLI::App& app, int* exit_code) {
  return AddCommand(app, exit_code, "probe", ProbeOptions, RunProbeCmd);
}

}  // namespace stet::tools
