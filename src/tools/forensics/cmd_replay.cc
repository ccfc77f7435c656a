// `stet replay`: thin CLI over forensics::RunReplay / RunProxyReplay. stdout
// carries one line per record (two more with the text around a fork) and the
// totals; stderr the progress bar and errors. It replays against --endpoint,
// or against an in-process stet serve of a local file (--against stet).
#include "tools/forensics/cmd_replay.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "forensics/client/openai.h"
#include "forensics/replay/replay.h"
#include "forensics/replay/replay_proxy.h"
#include "tools/common.h"
#include "tools/forensics/forensics_cli.h"
#include "tools/local_server.h"
#include "tools/model_catalog.h"

namespace stet::tools {

namespace {

struct ReplayArgs : EndpointArgs {
  std::string db;
  std::string id;
  std::string since;
  std::string against;  // "stet": answer with an in-process stet serve of -m FILE
  std::string clock = "none";
  int threads = 0;
  bool allow_fingerprint_change = false;
  bool logprobs = false;
  std::string json_out;
};

void ReplayOptions(CLI::App* cmd, ReplayArgs* a) {
  cmd->description(
      "Re-execute requests recorded by `stet serve --record "
      "FILE.db` against an endpoint, with the recorded seed "
      "and clock pinned, and report per record 'identical' (text, "
      "token ids, logprobs bit for bit) or where it "
      "first diverges. Refuses when the endpoint's "
      "system_fingerprint differs from the recorded one. Starts no "
      "server, unless --against stet answers with a local model "
      "file. On a store `stet proxy --record` wrote, each "
      "recorded request is sent as it went upstream and the "
      "report names, per session, the first request and token where "
      "the answer departs, and whether the answered "
      "model or system_fingerprint changed. Exit code: 0 all "
      "identical, 1 divergence, 2 error or refused.");
  cmd->add_option("db", a->db,
                  "Record store written by stet serve --record, or exchange store written by stet "
                  "proxy --record "
                  "(SQLite file or postgresql:// URL)")
      ->required();
  auto* id =
      cmd->add_option("--id", a->id, "Replay only the record with this id (the response id)");
  cmd->add_option("--since", a->since, "Replay records received at or after this ISO 8601 time")
      ->excludes(id);
  EndpointFlags flags = AddEndpointArgs(
      cmd, a, "Base URL, e.g. http://127.0.0.1:8080 (with or without /v1)",
      "Model name to send instead of the recorded one; with --against stet, the GGUF file to "
      "answer with",
      "Requests in flight");
  cmd->add_option("--against", a->against,
                  "'stet': answer with this machine's stet engine on the GGUF file (or pulled "
                  "name) given by -m "
                  "(default: the setup model), started in-process as `stet serve` would be, "
                  "instead of an endpoint: what would this model have said")
      ->check(CLI::IsMember({"stet"}))
      ->excludes(flags.endpoint);
  cmd->add_option("--clock", a->clock,
                  "Proxy stores: 'recorded' pins each request's recorded instant as "
                  "metadata.stet_clock (what stet's chat templates read as now); "
                  "'recorded-note' also tells the model in a first system message "
                  "(instructions for /v1/responses), for endpoints without that field; 'none' "
                  "sends the request as recorded. Records of stet serve --record always pin "
                  "their clock")
      ->check(CLI::IsMember({"none", "recorded", "recorded-note"}))
      ->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "With --against stet: threads (default: all cores)");
  cmd->add_flag(
      "--allow-fingerprint-change", a->allow_fingerprint_change,
      "Replay even when the endpoint's system_fingerprint differs, and report the divergences");
  cmd->add_flag("--logprobs", a->logprobs,
                "Ask for logprobs on every request (compared bit for bit) even where the recorded "
                "request did not");
  cmd->add_option("--json", a->json_out, "Write every outcome as JSON");
}

// The end of both replays: the report on stdout (or, when nothing was
// replayed, why on stderr), the JSON file --json names, the report's exit code.
template <typename R>
int Report(const ReplayArgs& a, const Result<R>& r, std::string (*text)(const R&),
           nlohmann::json (*json)(const R&)) {
  if (!r.ok()) return Fail(r.status());
  if (r->outcomes.empty()) {
    std::fprintf(stderr, "stet replay: %s\n", r->summary.c_str());
  } else {
    std::fputs(text(*r).c_str(), stdout);
    std::fflush(stdout);
  }
  Status st = WriteIfNamed(a.json_out, [&] { return json(*r).dump(2) + "\n"; });
  if (!st.ok()) return Fail(st);
  return r->exit_code;
}

// Exchanges recorded by `stet proxy` (a proxy store, SQLite or PostgreSQL).
int RunExchangeReplay(const ReplayArgs& a) {
  auto store = forensics::ExchangeStore::Open(a.db, forensics::ExchangeStore::Mode::kOpenExisting);
  if (!store.ok()) return Fail(store.status());
  forensics::ProxyReplayOptions o;
  a.CopyTo(&o);
  o.logprobs = a.logprobs;
  o.clock = a.clock == "recorded"        ? forensics::ProxyReplayOptions::Clock::kRecorded
            : a.clock == "recorded-note" ? forensics::ProxyReplayOptions::Clock::kRecordedNote
                                         : forensics::ProxyReplayOptions::Clock::kNone;
  forensics::ExchangeQuery q;
  q.id = a.id;
  q.since = a.since;
  return Report(a, forensics::RunProxyReplay(**store, q, o), forensics::ProxyReplayText,
                forensics::ProxyReplayJson);
}

int RunStoreReplay(const ReplayArgs& a) {
  if (forensics::DetectStoreKind(a.db) == forensics::StoreKind::kExchanges)
    return RunExchangeReplay(a);
  auto store = forensics::RecordStore::Open(a.db, forensics::RecordStore::Mode::kOpenExisting);
  if (!store.ok()) return Fail(store.status());
  forensics::ReplayOptions o;
  a.CopyTo(&o);
  o.allow_fingerprint_change = a.allow_fingerprint_change;
  o.force_logprobs = a.logprobs;
  forensics::RecordQuery q;
  q.id = a.id;
  q.since = a.since;
  return Report(a, forensics::RunReplay(**store, q, o), forensics::ReplaySummaryText,
                forensics::ReplayToJson);
}

// --against stet: the store replayed against an in-process `stet serve -m FILE`
// ("what would this model have said"); its fingerprint may differ from the
// recorded one, which the report shows.
int RunReplayCmd(ReplayArgs a) {
  if (a.against.empty()) {
    if (a.endpoint.empty()) {
      std::fprintf(stderr, "stet: error: replay needs --endpoint URL or --against stet\n");
      return kExitUsage;
    }
    return RunStoreReplay(a);
  }
  if (!a.endpoint.empty()) {
    std::fprintf(stderr, "stet: error: --against stet answers locally: drop --endpoint\n");
    return kExitUsage;
  }
  if (forensics::DetectStoreKind(a.db) == forensics::StoreKind::kUnknown) {
    // Say what is wrong with the store before loading a model.
    auto store = forensics::RecordStore::Open(a.db, forensics::RecordStore::Mode::kOpenExisting);
    if (!store.ok()) return Fail(store.status());
  }
  auto path = ResolveModelArg(a.model.empty() ? DefaultModelPath() : a.model);  // file or name
  if (!path.ok()) return Fail(path.status());
  LocalServerOptions lo;
  lo.model_path = *path;
  lo.threads = a.threads;
  lo.max_seqs = std::max(1, a.concurrency);
  auto local = LocalServer::Start(lo);
  if (!local.ok()) return Fail(local.status());
  std::fprintf(stderr, "stet replay: answering with %s (fingerprint %s) at %s\n",
               lo.model_path.c_str(), (*local)->fingerprint().c_str(), (*local)->url().c_str());
  a.endpoint = (*local)->url();
  a.model = (*local)->model_name();
  a.api_key.clear();
  a.allow_fingerprint_change = true;
  return RunStoreReplay(a);
}

}  // namespace

CLI::App* AddReplayCommand(CLI::App& app, int* exit_code) {
  return AddCommand(app, exit_code, "replay", ReplayOptions, RunReplayCmd);
}

}  // namespace stet::tools
