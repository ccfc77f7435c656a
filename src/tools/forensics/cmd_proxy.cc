// `stet proxy --upstream URL --record STORE`: binds, then relays and records
// until SIGTERM/SIGINT (stop accepting, let relayed requests finish up to
// --drain-timeout, exit 0). --retain deletes old exchanges at start and every
// hour. Flags are range-checked before binding (exit 2). The upstream key is
// read from the environment variable --upstream-key-env names, never from the
// command line, and is never printed.
#include "tools/forensics/cmd_proxy.h"

#include <pthread.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "base/utc_time.h"
#include "forensics/analysis/canary.h"
#include "forensics/proxy/proxy.h"
#include "tools/common.h"
#include "tools/range_option.h"

namespace stet::tools {

namespace {

struct ProxyArgs {
  std::string upstream;
  std::string record;
  std::string host = "127.0.0.1";
  int port = 8090;
  std::string upstream_key_env;
  std::vector<std::string> api_keys;
  std::string api_key_file;
  double logprob_sample = 0;
  uint64_t sample_seed = 0;
  int top_logprobs = 5;
  std::vector<std::string> redact;
  std::string retain;
  double upstream_timeout = 300;
  double connect_timeout = 10;
  int workers = 64;
  int64_t max_body_bytes = 16 << 20;
  int64_t max_response_bytes = int64_t{64} << 20;
  std::vector<std::string> allowed_hosts;
  std::string context_header = "X-Stet-Context";
  int drain_timeout = 30;
  bool no_log = false;
  std::string canary, canary_every = "1h", canary_model, canary_api = "chat";
  int canary_repeats = 3, canary_baseline_runs = 9;
};

void ProxyOptions(CLI::App* cmd, ProxyArgs* a) {
  cmd->description(
      "Recording reverse proxy in front of any OpenAI-compatible endpoint: "
      "relays /v1/chat/completions, "
      "/v1/completions and /v1/responses (SSE streams event by event) and "
      "records every exchange — request, "
      "answer (streams folded), answered model, system_fingerprint, request id "
      "and rate-limit headers, latency, "
      "time to first token, a snapshot of system prompt / tools / "
      "response_format — before the client sees it "
      "complete. Other paths pass through unrecorded. See docs/forensics.md.");
  cmd->add_option("--upstream", a->upstream,
                  "The endpoint's base URL, e.g. https://api.openai.com/v1")
      ->required();
  cmd->add_option("--record", a->record,
                  "Exchange store: a SQLite file (created when missing) or a postgresql:// URL")
      ->required();
  AddListenOptions(cmd, &a->host, &a->port);
  cmd->add_option(
      "--upstream-key-env", a->upstream_key_env,
      "Name of an environment variable holding the upstream API key; it replaces the client's "
      "Authorization (never logged or recorded). Without it the client's Authorization is "
      "forwarded");
  cmd->add_option(
      "--api-key", a->api_keys,
      "Require 'Authorization: Bearer KEY' from clients (repeatable; needs --upstream-key-env; "
      "--api-key-file or $STET_PROXY_API_KEY keep keys off the command line)");
  cmd->add_option("--api-key-file", a->api_key_file,
                  "File of client API keys, one per line ('#' comments); with --api-key and "
                  "$STET_PROXY_API_KEY (comma-separated), every key listed is accepted")
      ->check(CLI::ExistingFile);
  AddRangeOption(cmd, "--max-response-bytes", &a->max_response_bytes,
                 "Largest upstream answer relayed and recorded (a body, a whole stream, one SSE "
                 "event); past it 502 or an error event, and the record is marked truncated",
                 int64_t{1024}, int64_t{1} << 40);
  AddRangeOption(cmd, "--logprob-sample", &a->logprob_sample,
                 "Share of chat/completions requests that did not ask for logprobs to ask for "
                 "them (top 5), "
                 "record, and strip from the client's answer, e.g. 0.05",
                 0.0, 1.0);
  cmd->add_option("--sample-seed", a->sample_seed,
                  "Seed of the sampling draw (Philox on the request's arrival index; recorded)")
      ->capture_default_str();
  AddRangeOption(cmd, "--top-logprobs", &a->top_logprobs,
                 "Alternatives per token on sampled requests", 1, 20);
  cmd->add_option(
      "--redact", a->redact,
      "Replace this JSON path of every record with \"[redacted]\" before anything is written "
      "(repeatable): dotted keys with [*] or [N], rooted at the record, e.g. "
      "request.messages[*].content; '$.' is short for 'request.'");
  cmd->add_option("--retain", a->retain,
                  "Delete exchanges older than this (e.g. 30d, 12h) at start and hourly");
  AddRangeOption(
      cmd, "--upstream-timeout", &a->upstream_timeout,
      "Seconds to wait for the upstream's headers, and between its body bytes (else 504)", 0.001,
      86400.0);
  AddRangeOption(cmd, "--connect-timeout", &a->connect_timeout,
                 "Seconds to connect to the upstream (else 504)", 0.001, 3600.0);
  AddRangeOption(cmd, "--workers", &a->workers, "Requests relayed at once (/health has its own)", 1,
                 4096);
  AddRangeOption(cmd, "--max-body-bytes", &a->max_body_bytes,
                 "Largest request body accepted (else 413)", int64_t{1024}, int64_t{1} << 30);
  cmd->add_option("--allowed-hosts", a->allowed_hosts,
                  "Host header names accepted besides localhost, 127.0.0.1 and [::1] "
                  "(comma-separated; '*': any)")
      ->delimiter(',');
  cmd->add_option("--context-header", a->context_header,
                  "Request header whose JSON (prompt-template version, index version, ...) is "
                  "stored with the "
                  "record and not forwarded")
      ->capture_default_str();
  AddRangeOption(cmd, "--drain-timeout", &a->drain_timeout,
                 "Seconds SIGTERM waits for relayed requests", 0, 86400);
  cmd->add_flag("--no-log", a->no_log, "No per-request JSON log lines on stderr");
  cmd->add_option("--canary", a->canary,
                  "Canary prompt set (as `stet drift watch --canary`): sent to the upstream every "
                  "--canary-every "
                  "and recorded in the same store; `stet drift report STORE` tests it");
  cmd->add_option("--canary-every", a->canary_every, "Interval between canary rounds")
      ->capture_default_str();
  cmd->add_option("--canary-model", a->canary_model, "Model name the canary sends");
  cmd->add_option("--canary-api", a->canary_api, "chat or completions")
      ->capture_default_str()
      ->check(CLI::IsMember({"chat", "completions"}));
  AddRangeOption(cmd, "--canary-repeats", &a->canary_repeats,
                 "Runs of the prompt set per canary round", 1, 1000);
  AddRangeOption(cmd, "--canary-baseline-runs", &a->canary_baseline_runs,
                 "Runs that form the canary's baseline", 2, 1000);
}

// Now less `seconds`, to the millisecond (records carry milliseconds).
std::string IsoAgo(int64_t seconds) {
  return IsoUtcMillis(std::chrono::system_clock::now() - std::chrono::seconds(seconds));
}

int Usage(const std::string& m) {
  std::fprintf(stderr, "stet: error: %s\n", m.c_str());
  return kExitUsage;
}

int RunProxy(const ProxyArgs& a) {
  BoundMallocArenas();
  forensics::ProxyOptions o;
  o.host = a.host;
  o.port = a.port;
  o.upstream = a.upstream;
  if (!a.upstream_key_env.empty()) {
    const char* k = std::getenv(a.upstream_key_env.c_str());
    if (!k || !*k)
      return Usage("--upstream-key-env " + a.upstream_key_env +
                   ": that variable is unset or empty");
    o.upstream_key = k;
  }
  {
    auto keys = GatherApiKeys(a.api_keys, a.api_key_file, "STET_PROXY_API_KEY");
    if (!keys.ok()) return Usage(keys.status().message());
    o.api_keys = std::move(*keys);
  }
  o.logprob_sample = a.logprob_sample;
  o.sample_seed = a.sample_seed;
  o.top_logprobs = a.top_logprobs;
  for (const std::string& p : a.redact) {
    auto rp = forensics::ParseRedactPath(p);
    if (!rp.ok()) return Usage(rp.status().message());
    o.redact.push_back(*rp);
  }
  int64_t retain_s = 0;
  if (!a.retain.empty()) {
    retain_s = ParseDurationSeconds(a.retain);
    if (retain_s <= 0)
      return Usage("--retain '" + a.retain + "': use a count and a unit, e.g. 30d, 12h, 90m");
  }
  o.limits.timeout_ms = static_cast<int64_t>(a.upstream_timeout * 1000);
  o.limits.connect_timeout_ms = static_cast<int64_t>(a.connect_timeout * 1000);
  o.workers = a.workers;
  o.max_body_bytes = static_cast<size_t>(a.max_body_bytes);
  o.max_response_bytes = static_cast<size_t>(a.max_response_bytes);
  o.allowed_hosts = a.allowed_hosts;
  o.context_header = a.context_header;
  o.log_requests = !a.no_log;
  if (Status st = forensics::CheckProxyOptions(o); !st.ok()) return Usage(st.message());
  std::optional<std::vector<forensics::DriftPrompt>> canary_prompts;
  int64_t canary_every = 0;
  if (!a.canary.empty()) {
    canary_every = ParseDurationSeconds(a.canary_every);
    if (canary_every <= 0)
      return Usage("--canary-every '" + a.canary_every + "': use e.g. 1h, 15m, 30s");
    if (a.canary_model.empty())
      return Usage("--canary needs --canary-model (the model name to send)");
    auto p = forensics::LoadDriftPrompts(a.canary);
    if (!p.ok()) return ReportError(p.status());
    canary_prompts = std::move(*p);
  }

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto store = forensics::ExchangeStore::Open(a.record, forensics::ExchangeStore::Mode::kCreate);
  if (!store.ok()) return ReportError(store.status());
  o.store = std::shared_ptr<forensics::ExchangeStore>(std::move(*store));
  auto proxy = forensics::Proxy::Start(o);
  if (!proxy.ok()) return ReportError(proxy.status());
  std::fprintf(stderr, "stet proxy: upstream %s, recording in %s%s\n",
               forensics::MaskUrlPassword(a.upstream).c_str(), o.store->Describe().c_str(),
               a.logprob_sample > 0 ? (", logprobs on " + std::to_string(a.logprob_sample) +
                                       " of requests (seed " + std::to_string(a.sample_seed) + ")")
                                          .c_str()
                                    : "");
  std::fprintf(stderr, "listening on http://%s:%d\n", a.host.c_str(), (*proxy)->port());
  std::fflush(stderr);

  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread retention;
  if (retain_s > 0) {
    retention = std::thread([&, store = o.store] {
      std::unique_lock<std::mutex> lock(mu);
      do {
        lock.unlock();
        auto n = store->DeleteBefore(IsoAgo(retain_s));
        if (!n.ok()) {
          std::fprintf(stderr, "stet proxy: retention: %s\n", n.status().ToString().c_str());
        } else if (*n > 0) {
          std::fprintf(stderr, "stet proxy: retention: deleted %lld exchange(s) older than %s\n",
                       static_cast<long long>(*n), a.retain.c_str());
        }
        lock.lock();
      } while (!cv.wait_for(lock, std::chrono::hours(1), [&] { return stop; }));
    });
  }
  std::thread canary;
  if (!a.canary.empty()) {
    canary = std::thread([&, store = o.store, prompts = *canary_prompts] {
      forensics::CanaryOptions co;
      co.endpoint = a.upstream;
      co.api_key = o.upstream_key;
      co.model = a.canary_model;
      co.api = a.canary_api;
      co.repeats = a.canary_repeats;
      co.baseline_runs = a.canary_baseline_runs;
      co.limits = o.limits;
      std::unique_lock<std::mutex> lock(mu);
      do {
        lock.unlock();
        auto round = forensics::RunCanaryRound(*store, co, prompts);
        std::vector<forensics::ExchangeJson> records;
        forensics::ExchangeQuery q;
        q.kind = "canary";
        Status st = round.ok() ? store->ForEach(q,
                                                [&](const forensics::ExchangeJson& r) -> Status {
                                                  records.push_back(r);
                                                  return Status::Ok();
                                                })
                               : round.status();
        forensics::CanaryTestOptions t;
        t.baseline_runs = co.baseline_runs;
        t.set = forensics::CanarySetId(prompts, co);
        auto an =
            st.ok() ? forensics::AnalyzeCanary(records, t) : Result<forensics::CanaryAnalysis>(st);
        if (!an.ok()) {
          std::fprintf(stderr, "stet proxy: canary: %s\n", an.status().ToString().c_str());
        } else {
          const forensics::CanaryCheck& c = an->rounds.back();
          std::string flags;
          for (const auto& f : c.flags) flags += (flags.empty() ? "" : ",") + f;
          std::fprintf(stderr, "stet proxy: canary round %d: %s\n", c.round,
                       c.baseline      ? "baseline"
                       : flags.empty() ? "no drift"
                                       : ("FLAGGED: " + flags).c_str());
        }
        lock.lock();
      } while (!cv.wait_for(lock, std::chrono::seconds(canary_every), [&] { return stop; }));
    });
  }
  ExitWatchdog watchdog(a.drain_timeout + 5, kExitError,
                        "stet proxy: shutdown still not done, exiting");
  int s = 0;
  while (sigwait(&set, &s) != 0) {
  }
  std::fprintf(stderr,
               "stet proxy: shutting down: no new connections, finishing requests in flight\n");
  watchdog.Arm();
  (*proxy)->Shutdown(a.drain_timeout);
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  cv.notify_all();
  if (retention.joinable()) retention.join();
  if (canary.joinable()) canary.join();
  std::fprintf(stderr, "stet proxy: %lld exchange(s) recorded, bye\n",
               static_cast<long long>((*proxy)->recorded()));
  return kExitOk;
}

}  // namespace

CLI::App* AddProxyCommand(CLI::App& app, int* exit_code) {
  return AddCommand(app, exit_code, "proxy", ProxyOptions, RunProxy);
}

}  // namespace stet::tools
