// HTTP plumbing of `stet serve` on cpp-httplib: authentication keys,
// admission (--max-queue), request logs and metrics, cancellation on
// disconnect, and the drain on shutdown. The generation path (parse, prepare,
// submit, answer) lives in serve.cc and the modules it calls, the routes and
// the gate in routes.cc; this file owns lifetimes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <new>

#include "base/hash.h"
#include "base/utc_time.h"
#include "http/json_fields.h"
#include "server/routes.h"
#include "server/server_internal.h"

namespace stet::server {

using httplib::DataSink;
using httplib::Request;
using httplib::Response;
using HandlerResponse = httplib::Server::HandlerResponse;

namespace {

constexpr auto kCancelWait = std::chrono::seconds(10);
// After the drain timeout, how long cancelled requests get to write their answers.
constexpr auto kCancelGrace = std::chrono::seconds(1);
constexpr int kLightWorkers = 4;  // GET/HEAD: /health, /metrics, /v1/models
thread_local RequestRecord t_record;

}  // namespace

RequestRecord& CurrentRecord() { return t_record; }

void SendJson(Response& res, int status, const Json& j) {
  res.status = status;
  res.set_content(Dump(j), "application/json");
}

void SendError(Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(ErrorBody(e), "application/json");
  if (t_record.active && t_record.error.empty()) t_record.error = e.message;
}

ApiError MakeError(int status, std::string type, std::string code, std::string message) {
  ApiError e;
  e.status = status;
  e.type = std::move(type);
  e.code = std::move(code);
  e.message = std::move(message);
  return e;
}

// ---------------------------------------------------------------------------

bool Server::Impl::Authorized(const Request& req) const {
  return opts.api_keys.empty() || KeyIndex(req) >= 0;
}

int Server::Impl::KeyIndex(const Request& req) const {
  const std::string key = BearerKey(req);
  return key.empty() ? -1 : keys.Find(key);
}

uint64_t Server::Impl::CacheSalt(const Request& req, const std::string& cache_salt) const {
  uint64_t salt = 0;
  if (opts.api_keys.size() > 1) {
    const int k = KeyIndex(req);
    const std::string& key = opts.api_keys[k < 0 ? 0 : k];  // Gate let only keyed requests in
    salt = Fnv1a64(key.data(), key.size(), Fnv1a64("stet.tenant", 11));
  }
  if (!cache_salt.empty()) {
    salt = Fnv1a64(cache_salt.data(), cache_salt.size(), Fnv1a64(&salt, sizeof salt));
  }
  return salt;
}

void Server::Impl::LogRequest(const Request& req, const Response& res) {
  RequestRecord& r = t_record;
  const std::string label = r.active ? r.endpoint : EndpointLabel(req.path);
  const Route* route = FindRoute(label);
  const bool generation = route && route->generation;
  const auto now = Clock::now();
  const double total_s = r.active ? std::chrono::duration<double>(now - r.start).count() : 0.0;
  metrics.CountRequest(label, res.status);
  if (generation) metrics.ObserveRequestDuration(total_s);
  if (opts.log_requests && label != "/health" && label != "/metrics") {
    Json j = Json::object();
    j["ts"] = NowIso8601();
    j["id"] = r.active ? Json(r.id) : Json(nullptr);
    j["method"] = req.method;
    j["endpoint"] = label == "other" ? req.path : label;
    j["status"] = res.status;
    if (generation) {
      j["stream"] = r.stream;
      j["prompt_tokens"] = r.prompt_tokens >= 0 ? Json(r.prompt_tokens) : Json(nullptr);
      j["completion_tokens"] = r.completion_tokens >= 0 ? Json(r.completion_tokens) : Json(nullptr);
      j["cached_tokens"] = r.cached_tokens >= 0 ? Json(r.cached_tokens) : Json(nullptr);
      j["ttft_ms"] = r.ttft_s >= 0 ? Json(std::round(r.ttft_s * 1e4) / 10) : Json(nullptr);
      j["seed"] = r.seed ? Json(*r.seed) : Json(nullptr);
      if (r.cancelled) j["cancelled"] = true;
    }
    j["total_ms"] = std::round(total_s * 1e4) / 10;
    if (!r.error.empty()) j["error"] = r.error;
    const std::string line = Dump(j) + "\n";
    std::lock_guard<std::mutex> lock(log_mu);
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }
  t_record = RequestRecord{};
}

Server::Impl::Slot Server::Impl::AdmitOrRefuse(Response& res) {
  auto job = std::make_shared<Job>();
  if (Admit(job)) return Slot(this, std::move(job));
  if (draining) {
    SendError(res, MakeError(503, "server_error", "shutting_down", "The server is shutting down."));
  } else {
    res.set_header("Retry-After", "1");
    SendError(res, MakeError(429, "rate_limit_error", "rate_limit_exceeded",
                             "The server has " + std::to_string(opts.max_queue) +
                                 " requests in flight (--max-queue); retry later."));
  }
  return Slot(this, nullptr);
}

bool Server::Impl::Admit(const std::shared_ptr<Job>& job) {
  std::lock_guard<std::mutex> lock(jobs_mu);
  // Draining: Shutdown's wait for admitted == 0 must not see newcomers.
  if (draining || admitted >= opts.max_queue) return false;
  ++admitted;
  jobs.insert(job);
  return true;
}

void Server::Impl::Release(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard<std::mutex> lock(jobs_mu);
    --admitted;
    jobs.erase(job);
  }
  jobs_cv.notify_all();
}

void Server::Impl::Account(const Collector& coll) {
  const UsageCounts u = coll.usage();
  metrics.AddTokens(u.prompt_tokens, u.completion_tokens, u.cached_tokens);
  if (coll.ttft() >= 0) metrics.ObserveTtft(coll.ttft());
  for (double d : coll.inter_token()) metrics.ObserveInterToken(d);
  t_record.prompt_tokens = u.prompt_tokens;
  t_record.completion_tokens = u.completion_tokens;
  t_record.cached_tokens = u.cached_tokens;
  t_record.ttft_s = coll.ttft();
}

void Server::Impl::CancelAndWait(Job& job, Collector& coll) {
  for (uint64_t id : job.engine_ids) engine->Cancel(id);
  const auto deadline = Clock::now() + kCancelWait;
  Job::Item it;
  bool shown;
  while (!coll.done() && Clock::now() < deadline) {
    if (job.Pop(&it, kPollInterval)) coll.Apply(it, &shown);
  }
}

void Server::Impl::EndJob(const std::shared_ptr<Job>& job, Collector& coll) {
  if (!coll.done()) {  // the client went away: cancel what still runs in the engine
    CancelAndWait(*job, coll);
    metrics.CountCancelled();
    t_record.cancelled = true;
  }
  Account(coll);
  Release(job);
}

void Server::Impl::FinishAnswer(Answer& a) {
  if (a.finalized) return;
  a.finalized = true;
  EndJob(a.job, *a.coll);
}

// ---------------------------------------------------------------------------

Status CheckServerOptions(const ServerOptions& opts) {
  if (opts.max_queue < 1) return InvalidArgument("--max-queue must be >= 1");
  if (opts.port < 0 || opts.port > 65535) return InvalidArgument("--port must be in [0, 65535]");
  if (opts.http_threads < 0) return InvalidArgument("--http-threads must be >= 1 (0: the default)");
  if (opts.max_body_bytes < 1024) return InvalidArgument("--max-body-bytes must be >= 1024");
  if (opts.read_timeout_s < 1) return InvalidArgument("--read-timeout must be >= 1");
  if (opts.header_timeout_s < 1) return InvalidArgument("--header-timeout must be >= 1");
  if (opts.body_timeout_s < 1) return InvalidArgument("--body-timeout must be >= 1");
  if (opts.keep_alive_s < 1) return InvalidArgument("the keep-alive timeout must be >= 1 s");
  if (opts.drain_timeout_s < 0) return InvalidArgument("--drain-timeout must be >= 0");
  for (const std::string& k : opts.api_keys) {
    if (k.empty()) return InvalidArgument("--api-key must not be empty (no client could send it)");
  }
  auto hosts = MakeHostPolicy(opts.host, opts.allowed_hosts);
  return hosts.ok() ? Status::Ok() : hosts.status();
}

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& opts) {
  STET_RETURN_IF_ERROR(CheckServerOptions(opts));
  STET_ASSIGN_OR_RETURN(HostPolicy hosts, MakeHostPolicy(opts.host, opts.allowed_hosts));
  std::unique_ptr<Server> s(new Server());
  s->impl_ = std::make_unique<Impl>();
  Impl& I = *s->impl_;
  I.keys = ApiKeyDigests(opts.api_keys);
  I.opts = opts;
  I.hosts = std::move(hosts);
  if (I.opts.http_threads == 0) I.opts.http_threads = opts.max_queue + 16;
  I.created = static_cast<int64_t>(std::time(nullptr));
  I.Routes();
  STET_ASSIGN_OR_RETURN(I.port, Listen(I.http, opts.host, opts.port));
  ConnLimits lim;
  lim.header_timeout = std::chrono::seconds(I.opts.header_timeout_s);
  lim.body_timeout = std::chrono::seconds(I.opts.body_timeout_s);
  lim.body_min_rate = I.opts.body_min_rate;
  lim.max_connections_per_client = I.opts.max_connections_per_client;
  lim.idle_timeout = std::chrono::seconds(I.opts.keep_alive_s);
  lim.io_timeout = std::chrono::seconds(I.opts.read_timeout_s);
  lim.workers = I.opts.http_threads;
  lim.light_workers = kLightWorkers;
  lim.max_requests_per_connection = kMaxRequestsPerConnection;
  I.conns = StartServing(I.http, lim,
                         [impl = &I](int status) { impl->metrics.CountRequest("other", status); });
  return s;
}

Server::~Server() {
  if (!impl_) return;
  Shutdown();
  Wait();
}

int Server::port() const { return impl_->port; }
bool Server::ready() const { return impl_->ready; }
std::string Server::chat_template_builtin() const {
  return impl_->chat ? impl_->chat->builtin_name() : "";
}
std::string Server::chat_template_reason() const {
  return impl_->chat ? impl_->chat->builtin_reason() : "";
}

Status Server::Attach(std::unique_ptr<Engine> engine, ModelInfo info) {
  Impl& I = *impl_;
  if (I.ready) return InvalidArgument("the server already has an engine");
  ChatPromptSetup setup;
  setup.source = info.chat_template;
  setup.architecture = info.architecture;
  setup.model_name = info.model_name;
  setup.limits = info.template_limits;
  setup.default_kwargs = info.chat_template_kwargs;
  STET_ASSIGN_OR_RETURN(ChatPrompt chat, ChatPrompt::Create(setup, engine->tokenizer()));
  ServeModel& m = I.model;
  m.template_sha256 = Sha256Hex(chat.source().data(), chat.source().size());
  m.tool_format = &DetectToolCallFormat(chat.source());
  // Every token stands for at most the bytes of its longest piece (specials
  // included), and tokenizing never drops input bytes: a text longer than
  // n_ctx such pieces has more than n_ctx tokens.
  const Tokenizer& tok = engine->tokenizer();
  size_t longest = 4;  // an unknown character's token stands for one UTF-8 character
  const ReasoningSyntax think;
  bool think_tags = chat.source().find(think.close) != std::string::npos;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    const std::string piece = tok.TokenToPiece(id, /*render_special=*/true);
    longest = std::max(longest, piece.size());
    think_tags = think_tags || piece == think.close;
  }
  if (info.reasoning_format == "deepseek" || (info.reasoning_format == "auto" && think_tags))
    m.reasoning = think;
  m.max_prompt_bytes = static_cast<size_t>(engine->n_ctx()) * longest;
  I.chat.emplace(std::move(chat));
  I.info = std::move(info);
  I.engine = std::move(engine);
  m.engine = I.engine.get();
  m.chat = &*I.chat;
  m.model_id = I.info.names.id;
  I.ready = true;
  return Status::Ok();
}

bool Server::Shutdown() {
  Impl& I = *impl_;
  std::call_once(I.shutdown_once, [&I] {
    {
      std::lock_guard<std::mutex> lock(I.jobs_mu);
      I.draining = true;  // under jobs_mu: nothing is admitted after the wait below starts
    }
    if (I.conns) I.conns->StopAccepting();
    {
      std::unique_lock<std::mutex> lock(I.jobs_mu);
      const auto done = [&] { return I.admitted == 0; };
      I.drained = I.jobs_cv.wait_for(lock, std::chrono::seconds(I.opts.drain_timeout_s), done);
      if (!I.drained) {
        for (const auto& job : I.jobs) {
          for (uint64_t id : job->engine_ids) I.engine->Cancel(id);
        }
        I.jobs_cv.wait_for(lock, kCancelGrace, done);
      }
    }
    // Whatever the clients still do (trickle a body, read nothing), their
    // sockets are shut now, so every worker returns.
    if (I.conns) I.conns->Stop();
    I.http.CloseListenSocket();
    {
      std::lock_guard<std::mutex> lock(I.stop_mu);
      I.stopped = true;
    }
    I.stop_cv.notify_all();
  });
  return I.drained;
}

void Server::Wait() {
  Impl& I = *impl_;
  std::unique_lock<std::mutex> lock(I.stop_mu);
  I.stop_cv.wait(lock, [&] { return I.stopped; });
}

ServedModel ModelNames(const std::string& path, const std::string& general_name) {
  ServedModel m;
  const size_t slash = path.find_last_of('/');
  m.file_name = slash == std::string::npos ? path : path.substr(slash + 1);
  m.file_stem = m.file_name;
  if (m.file_stem.size() > 5 && m.file_stem.compare(m.file_stem.size() - 5, 5, ".gguf") == 0) {
    m.file_stem.resize(m.file_stem.size() - 5);
  }
  m.id = general_name.empty() ? m.file_stem : general_name;
  return m;
}

ModelInfo ModelInfoOf(const std::string& path, const Engine& engine) {
  const gguf::GgufFile& file = engine.model().file();
  auto general_name = file.GetString("general.name");
  auto tmpl = file.GetString("tokenizer.chat_template");
  auto arch = file.GetString("general.architecture");
  auto basename = file.GetString("general.basename");
  ModelInfo info;
  info.names = ModelNames(path, general_name.ok() ? *general_name : "");
  if (tmpl.ok()) info.chat_template = *tmpl;
  if (arch.ok()) info.architecture = *arch;
  info.model_name =
      (general_name.ok() ? *general_name : "") + " " + (basename.ok() ? *basename : "");
  return info;
}

}  // namespace stet::server
