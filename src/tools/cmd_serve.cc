// `stet serve`: binds first (so /health answers 503 "loading" at once), loads
// the model with progress on stderr, builds the engine, then serves until
// SIGTERM/SIGINT: stop accepting, drain in-flight requests, exit 0 (1 when
// --drain-timeout cut some short). A second signal exits at once. Every
// numeric flag is range-checked here, so bad values are exit 2 before binding.
#include "tools/cmd_serve.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "dist/mpi_world.h"
#include "engine/engine.h"
#include "server/openai/chat_prompt.h"
#include "server/server.h"
#include "tools/common.h"
#include "tools/forensics/cmd_record.h"
#include "tools/model_catalog.h"
#include "tools/range_option.h"

namespace stet::tools {

namespace {

constexpr int kShutdownGraceS = 5;  // past --drain-timeout, before the process exits regardless
// After a shutdown signal, the longest a tensor-parallel collective waits for
// the other ranks (mpirun kills the job a second after its own signal).
constexpr double kTpDrainWaitS = 0.5;

struct ServeArgs {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 0;
  std::vector<std::string> api_keys;
  std::string api_key_file;
  int max_queue = 64;
  int ctx = 4096;
  std::string kv_type = "auto";
  std::string numerics = "invariant";
  std::string isa = "auto";
  int max_seqs = 64;
  int batch_tokens = 512;
  int chunk = 256;
  int http_threads = 0;
  int64_t max_body_bytes = 16 << 20;
  int drain_timeout = 120;
  int read_timeout = 10;
  int header_timeout = 10;
  int body_timeout = 60;
  size_t body_min_rate = 1024;
  int max_connections_per_client = 256;
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> cors_origins;
  std::vector<std::string> served_names;
  bool metrics_public = false;
  bool no_log = false;
  std::string record;                     // --record FILE.db
  std::string chat_template_file;         // replaces the GGUF's tokenizer.chat_template
  std::string chat_template_kwargs;       // JSON object: template variables for every request
  std::string reasoning_format = "auto";  // none | auto | deepseek
  std::string spec;                       // "": off, or draft with --draft-model
  std::string draft_model;
  int spec_k = 4;
  TemplateLimits template_limits;
};

void ServeOptions(CLI::App* cmd, ServeArgs* a) {
  cmd->description(
      "OpenAI-compatible HTTP server: /v1/completions, /v1/chat/completions (SSE streaming), "
      "/v1/models, /health, /metrics. See docs/api.md.");
  AddModelOption(cmd, &a->model);
  AddListenOptions(cmd, &a->host, &a->port);
  AddRangeOption(cmd, "-t,--threads", &a->threads,
                 "Compute threads (0: all cores); never changes results", 0, 1024);
  cmd->add_option(
         "--api-key", a->api_keys,
         "Require 'Authorization: Bearer KEY' on /v1/* and /metrics (repeat for several keys; "
         "--api-key-file or $STET_API_KEY keep keys off the command line)")
      ->check([](const std::string& k) {
        return k.empty() ? std::string("an API key cannot be empty") : "";
      });
  cmd->add_option("--api-key-file", a->api_key_file,
                  "File of API keys, one per line ('#' comments); with --api-key and "
                  "$STET_API_KEY (comma-separated), every key listed is accepted")
      ->check(CLI::ExistingFile);
  AddRangeOption(cmd, "--max-queue", &a->max_queue,
                 "Generation requests in flight (waiting + running) beyond which new ones get 429",
                 1, 1 << 20);
  AddRangeOption(cmd, "-c,--ctx", &a->ctx, "Context length per sequence (clamped to the model's)",
                 2, 1 << 24);
  AddNumericsOptions(cmd, &a->numerics, &a->kv_type);
  cmd->add_option("--isa", a->isa,
                  "Kernel path: auto, scalar, avx2, avx512 or neon; never changes results")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "scalar", "avx2", "avx512", "neon"}));
  AddRangeOption(cmd, "--max-seqs", &a->max_seqs, "Sequences decoded together (KV slots)", 1,
                 65536);
  AddRangeOption(cmd, "--batch-tokens", &a->batch_tokens, "Tokens per forward step", 1, 65536);
  AddRangeOption(cmd, "--chunk", &a->chunk,
                 "Prefill chunk per sequence per step; never changes results", 1, 65536);
  cmd->add_option("--spec", a->spec,
                  "Speculative decoding for requests that do not set 'speculative': off, lookup "
                  "(prompt lookup) or draft (--draft-model); never changes results [default: "
                  "off, draft with --draft-model]")
      ->check(CLI::IsMember({"off", "lookup", "draft"}));
  cmd->add_option("--draft-model", a->draft_model,
                  "Draft model for speculation: a GGUF (or pulled name) with the model's "
                  "tokenizer, checked at load; with --spec off, used by requests that set "
                  "'speculative': true");
  AddRangeOption(cmd, "--spec-k", &a->spec_k, "Most draft tokens verified per sequence per step", 1,
                 kMaxSpecK);
  cmd->add_option(
         "--http-threads", a->http_threads,
         "Requests served at once besides GET/HEAD (reading bodies, generating, streaming) "
         "[default: max-queue + 16]")
      ->check(CLI::Range(1, 4096));
  AddRangeOption(
      cmd, "--max-body-bytes", &a->max_body_bytes,
      "Largest request body accepted, counted as it arrives whatever the framing (else 413)",
      int64_t{1024}, int64_t{1} << 30);
  AddRangeOption(
      cmd, "--drain-timeout", &a->drain_timeout,
      "Seconds SIGTERM waits for in-flight requests before cancelling them (then exit 1)", 0,
      86400);
  AddRangeOption(
      cmd, "--header-timeout", &a->header_timeout,
      "Seconds a request's line and headers may take to arrive, however they trickle (else 408)", 1,
      86400);
  AddRangeOption(cmd, "--body-timeout", &a->body_timeout,
                 "Seconds a request's body may take to arrive after its headers (else 408)", 1,
                 86400);
  cmd->add_option("--body-min-rate", a->body_min_rate,
                  "Bytes/s a request body must average once it has had 5 s (else 408), so a "
                  "trickled body cannot hold a worker for the whole --body-timeout; 0: no minimum")
      ->capture_default_str();
  AddRangeOption(cmd, "--max-connections-per-client", &a->max_connections_per_client,
                 "Connections one client address may hold open at once (more get 503); "
                 "loopback is exempt (a local reverse proxy carries everyone's); 0: no cap",
                 0, 1 << 20);
  AddRangeOption(cmd, "--read-timeout", &a->read_timeout,
                 "Seconds one read or write may wait for the client (a silent or non-reading "
                 "client is dropped)",
                 1, 86400);
  cmd->add_option("--allowed-hosts", a->allowed_hosts,
                  "Host header names accepted besides localhost, 127.0.0.1 and [::1] "
                  "(comma-separated; '*': any). "
                  "Default: those only when --host is a loopback address, any Host otherwise")
      ->delimiter(',');
  cmd->add_option("--cors-origin", a->cors_origins,
                  "A browser origin whose pages may call the API (repeatable; '*': any): CORS "
                  "headers and preflights for it. Default: none (the Host and Content-Type "
                  "checks against DNS rebinding and CSRF stay either way)")
      ->check([](const std::string& o) -> std::string {
        if (o == "*" || o.rfind("http://", 0) == 0 || o.rfind("https://", 0) == 0) {
          if (o.find_first_of(" \t\r\n,") == std::string::npos && o.back() != '/') return "";
        }
        return "an origin is scheme://host[:port] without a path, or '*'";
      });
  cmd->add_option("--served-model-name", a->served_names,
                  "A name the model answers to (repeatable): the first is the id answers and "
                  "/v1/models report, every one is accepted in requests (besides the file's "
                  "name). Default: general.name or the file's stem")
      ->check([](const std::string& n) -> std::string {
        return n.empty() || n.size() > 256 ? "a name is 1 to 256 bytes" : "";
      });
  cmd->add_flag("--metrics-public", a->metrics_public,
                "With --api-key: /metrics answers without a key");
  cmd->add_flag("--no-log", a->no_log, "No per-request JSON log lines on stderr");
  cmd->add_option("--record", a->record,
                  "Store every answered request with all that shaped it in this SQLite file, "
                  "committed before the "
                  "answer is sent (replay with `stet replay FILE.db`)");
  cmd->add_option("--chat-template-file", a->chat_template_file,
                  "Render chat prompts with this Jinja template instead of the model's "
                  "tokenizer.chat_template");
  cmd->add_option("--chat-template-kwargs", a->chat_template_kwargs,
                  "A JSON object of chat template variables every request gets, e.g. "
                  "'{\"enable_thinking\": false}' (a request's chat_template_kwargs override it "
                  "key by key)");
  cmd->add_option("--reasoning-format", a->reasoning_format,
                  "Where a chat answer's <think>...</think> block goes: auto (reasoning_content "
                  "and Responses reasoning items when the template or vocabulary has the tags), "
                  "deepseek (always split), none (left inline in the content)")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "auto", "deepseek"}));
  AddRangeOption(
      cmd, "--template-max-steps", &a->template_limits.max_steps,
      "Work one chat template render may do (steps of ~50 ns); over it the request gets a 400",
      uint64_t{1}, uint64_t{1} << 40);
  AddRangeOption(cmd, "--template-max-memory", &a->template_limits.max_memory_bytes,
                 "Bytes one chat template render may hold at once", uint64_t{1}, uint64_t{1} << 40);
  AddRangeOption(cmd, "--template-max-output", &a->template_limits.max_output_bytes,
                 "Largest rendered chat prompt, and largest string a template may build, in bytes",
                 uint64_t{1}, uint64_t{1} << 40);
  AddRangeOption(cmd, "--template-timeout", &a->template_limits.max_wall_ms,
                 "Wall-clock limit of one chat template render in ms (0: none); the limits above "
                 "stop first",
                 int64_t{0}, int64_t{86400000});
}

// Signals are taken by one thread (sigwait) so no handler runs inside the
// engine or a worker; the main thread is told through a flag and a cv.
struct Signals {
  std::mutex mu;
  std::condition_variable cv;
  int count = 0;
  std::atomic<bool> serving{false};  // the engine is attached: a signal means drain
};

// Every open connection needs a descriptor; the usual soft limit (1024) would
// let a few hundred idle clients crowd out the rest. The hard limit allows more.
void RaiseFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = rl.rlim_max == RLIM_INFINITY ? 8192 : std::min<rlim_t>(rl.rlim_max, 8192);
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
    rl.rlim_cur = want;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

int RunServe(const ServeArgs& a) {
  BoundMallocArenas();
  auto numerics = ParseNumericsChoice(a.numerics, a.kv_type);
  if (!numerics.ok()) return ReportError(numerics.status());
  const DType kv_type = numerics->kv_type;
  const NumericsMode mode = numerics->mode;
  auto isa = ParseIsa(a.isa);
  if (!isa.ok()) return ReportError(isa.status());
  std::string chat_template_override;
  if (!a.chat_template_file.empty()) {
    auto text = ReadWholeFile(a.chat_template_file, "chat template file");
    if (!text.ok()) return ReportError(text.status());
    chat_template_override = std::move(*text);
    if (chat_template_override.empty()) {
      return ReportError(
          InvalidArgument("chat template file '" + a.chat_template_file + "' is empty"));
    }
  }

  nlohmann::ordered_json template_kwargs;
  if (!a.chat_template_kwargs.empty()) {
    template_kwargs = nlohmann::ordered_json::parse(a.chat_template_kwargs, nullptr, false);
    server::ChatPromptOptions check;
    check.chat_template_kwargs = template_kwargs;
    check.add_generation_prompt = false;
    auto bad = template_kwargs.is_object() ? server::CheckChatPromptOptions(check) : std::nullopt;
    if (!template_kwargs.is_object() || bad) {
      std::fprintf(stderr, "stet: error: --chat-template-kwargs: %s\n",
                   bad ? bad->message.c_str()
                       : "must be a JSON object, such as '{\"enable_thinking\": false}'");
      return kExitUsage;
    }
  }

  // Block the signals before any thread starts, so every thread inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server
  RaiseFileLimit();

  server::ServerOptions so;
  so.host = a.host;
  so.port = a.port;
  {
    auto keys = GatherApiKeys(a.api_keys, a.api_key_file, "STET_API_KEY");
    if (!keys.ok()) {
      std::fprintf(stderr, "stet: error: %s\n", keys.status().message().c_str());
      return kExitUsage;
    }
    so.api_keys = std::move(*keys);
  }
  so.max_queue = a.max_queue;
  so.http_threads = a.http_threads;
  so.max_body_bytes = static_cast<size_t>(a.max_body_bytes);
  so.drain_timeout_s = a.drain_timeout;
  so.read_timeout_s = a.read_timeout;
  so.header_timeout_s = a.header_timeout;
  so.body_timeout_s = a.body_timeout;
  so.body_min_rate = a.body_min_rate;
  so.max_connections_per_client = a.max_connections_per_client;
  so.allowed_hosts = a.allowed_hosts;
  so.cors_origins = a.cors_origins;
  so.metrics_public = a.metrics_public;
  so.log_requests = !a.no_log;
  if (Status st = server::CheckServerOptions(so); !st.ok()) {
    std::fprintf(stderr, "stet: error: %s\n", st.message().c_str());
    return kExitUsage;
  }
  if (!a.record.empty()) {
    auto recorder = OpenRequestRecorder(a.record);
    if (!recorder.ok()) return ReportError(recorder.status());
    so.recorder = *recorder;
    std::fprintf(stderr,
                 "stet: recording every answered request in %s (SQLite, WAL, synchronous=FULL)\n",
                 a.record.c_str());
  }
  auto srv = server::Server::Start(so);
  if (!srv.ok()) return ReportError(srv.status());
  server::Server& server = **srv;
  const std::string url = "http://" + a.host + ":" + std::to_string(server.port());
  std::fprintf(stderr, "stet: loading %s (%s/health answers 503 until ready)\n", a.model.c_str(),
               url.c_str());

  auto sig = std::make_shared<Signals>();
  const int limit = a.drain_timeout + kShutdownGraceS;
  ExitWatchdog watchdog(
      limit, kExitError,
      "stet: shutdown still not done " + std::to_string(limit) + " s after the signal, exiting");
  std::thread([sig, set] {
    for (;;) {
      int s = 0;
      if (sigwait(&set, &s) != 0) continue;
      int count;
      {
        std::lock_guard<std::mutex> lock(sig->mu);
        count = ++sig->count;
      }
      sig->cv.notify_all();
      // Tensor parallelism: a rank that is gone (mpirun signals rank 0 a second
      // after one dies, and kills it a second later) fails the drain's
      // collectives at once, so the requests in flight get its error.
      if (TpComm* world = dist::World()) world->Hurry(kTpDrainWaitS);
      if (count >= 2 || !sig->serving) {  // nothing to drain yet, or asked twice
        std::fprintf(stderr, "stet: %s, exiting now\n",
                     count >= 2 ? "second signal" : "signal during load");
        std::fflush(stderr);
        std::_Exit(count >= 2 ? 1 : 0);
      }
    }
  }).detach();

  EngineOptions eo;
  eo.n_ctx = a.ctx;
  eo.kv_type = kv_type;
  eo.n_threads = ThreadsOrAllCores(a.threads);
  eo.isa = *isa;
  eo.numerics = mode;
  eo.max_seqs = a.max_seqs;
  eo.max_batch_tokens = a.batch_tokens;
  eo.chunk_size = a.chunk;
  // Checked at parse; --spec off with --draft-model: loaded, for requests that ask for it.
  eo.spec.mode = *ParseSpecMode(!a.spec.empty() ? a.spec : a.draft_model.empty() ? "off" : "draft");
  eo.spec.k = a.spec_k;
  eo.spec.draft_model = a.draft_model;
  if (Status vs = ValidateSpecOptions(eo.spec); !vs.ok()) return ReportError(vs);
  eo.tp = dist::World();  // under mpirun -np N: rank 0 of the group
  auto engine = Engine::Open(a.model, eo, /*progress=*/true);
  if (!engine.ok()) return ReportError(engine.status());
  server::ModelInfo info = server::ModelInfoOf(a.model, **engine);
  if (!a.served_names.empty()) {  // the first is what answers report; all are accepted
    info.names.id = a.served_names.front();
    info.names.aliases = a.served_names;
  }
  if (!chat_template_override.empty()) info.chat_template = chat_template_override;
  info.template_limits = a.template_limits;
  info.chat_template_kwargs = template_kwargs;
  info.reasoning_format = a.reasoning_format;
  const std::string fingerprint = (*engine)->fingerprint();
  const std::string plan_note = (*engine)->model().kernel_plan_note();
  const int n_ctx = (*engine)->n_ctx();
  const int tp_ranks = (*engine)->tp_ranks();
  const Engine* eng = engine->get();  // the server owns it from Attach until Wait returns
  Status st = server.Attach(std::move(*engine), info);
  if (!st.ok()) {
    ReportError(st);
    const bool limit = st.code() == StatusCode::kResourceExhausted;
    const char* raise =
        "raise the limit it names (--template-max-steps, --template-max-memory, "
        "--template-max-output, --template-timeout)";
    if (chat_template_override.empty()) {
      std::fprintf(stderr,
                   "stet: the model's chat template is refused: replace it with "
                   "--chat-template-file FILE%s%s\n",
                   limit ? ", or " : "", limit ? raise : "");
    } else {
      std::fprintf(stderr, "stet: the chat template in %s is refused%s%s\n",
                   a.chat_template_file.c_str(), limit ? ": " : "", limit ? raise : "");
    }
    return kExitError;
  }
  sig->serving = true;
  std::fprintf(stderr, "stet: model '%s', context %d, %d threads, isa %s, fingerprint %s%s\n",
               info.names.id.c_str(), n_ctx, eo.n_threads, IsaName(eo.isa), fingerprint.c_str(),
               !chat_template_override.empty() ? ", chat template from --chat-template-file" : "");
  if (!server.chat_template_builtin().empty()) {
    std::fprintf(stderr,
                 "stet: the model file has no chat template: using stet's built-in '%s' (%s)\n",
                 server.chat_template_builtin().c_str(), server.chat_template_reason().c_str());
  }
  if (tp_ranks > 1) {
    std::fprintf(stderr, "stet: tensor parallelism: the model is split across %d ranks\n",
                 tp_ranks);
  }
  if (!plan_note.empty()) std::fprintf(stderr, "stet: %s\n", plan_note.c_str());
  std::fprintf(stderr, "listening on %s\n", url.c_str());
  std::fflush(stderr);

  // Until a signal; or, with tensor parallelism, until the group breaks (a
  // rank died: the engine has failed what was in flight and /health says why).
  Status engine_health;
  {
    std::unique_lock<std::mutex> lock(sig->mu);
    while (
        !sig->cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return sig->count > 0; })) {
      engine_health = eng->health();
      if (!engine_health.ok()) break;
    }
  }
  if (!engine_health.ok()) {
    // A second of /health saying why (and new requests refused with it), then out.
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::fprintf(stderr, "stet: exiting: %s\n", engine_health.message().c_str());
    server.Shutdown();
    server.Wait();
    return kExitError;
  }
  std::fprintf(stderr, "stet: shutting down: no new connections, draining requests in flight\n");
  // Last resort, should a handler not return once its socket is shut (the
  // drain cancels generation and closes every connection well before this).
  watchdog.Arm();
  const bool drained = server.Shutdown();
  server.Wait();
  if (Status h = eng->health(); !h.ok()) {  // a rank died during the drain
    std::fprintf(stderr, "stet: %s\n", h.message().c_str());
    return kExitError;
  }
  if (!drained) {
    std::fprintf(stderr,
                 "stet: --drain-timeout (%d s) passed: requests still running were cancelled\n",
                 a.drain_timeout);
    return kExitError;
  }
  std::fprintf(stderr, "stet: drained, bye\n");
  return kExitOk;
}

}  // namespace

CLI::App* AddServeCommand(CLI::App& app, int* exit_code) {
  return AddCommand(app, exit_code, "serve", ServeOptions, WithModels(RunServe));
}

}  // namespace stet::tools
