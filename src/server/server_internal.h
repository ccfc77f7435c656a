// Internals shared by server.cc (plumbing, lifecycle, streaming), routes.cc
// (the route table, the gate, registration) and endpoints.cc / endpoints_api.cc
// (the endpoint handlers): the per-request record behind the log line, and
// Server::Impl. Not part of the server's API.
#pragma once

#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "http/http_conn.h"
#include "http/http_gate.h"
#include "http/http_server.h"
#include "server/generation.h"
#include "server/job.h"
#include "server/metrics.h"
#include "server/openai/chat_prompt.h"
#include "server/openai/tokenize_api.h"
#include "server/openai/wire_format.h"
#include "server/pipeline.h"
#include "server/record_builder.h"
#include "server/server.h"

namespace stet::server {

// What the request log line and metrics need, gathered on the worker thread
// that serves the request (handler, stream provider and logger all run there).
struct RequestRecord {
  bool active = false;
  std::string id;
  std::string endpoint;
  Clock::time_point start;
  bool stream = false;
  int64_t prompt_tokens = -1, completion_tokens = -1, cached_tokens = -1;
  double ttft_s = -1;
  std::optional<uint64_t> seed;
  std::string error;
  bool cancelled = false;
};
RequestRecord& CurrentRecord();  // thread-local

// Requests served on one keep-alive connection before it is closed.
inline constexpr int kMaxRequestsPerConnection = 100;
// How often a waiting answer checks on its client (and a stream on its sink).
inline constexpr auto kPollInterval = std::chrono::milliseconds(100);

void SendJson(httplib::Response& res, int status, const Json& j);
void SendError(httplib::Response& res, const ApiError& e);
ApiError MakeError(int status, std::string type, std::string code, std::string message);

struct Server::Impl {
  ServerOptions opts;
  HostPolicy hosts;
  ApiKeyDigests keys;  // opts.api_keys as digests
  HttpServer http;
  std::unique_ptr<ConnectionLoop> conns;  // accepts and reads; calls http.Serve per request
  int port = 0;
  std::atomic<bool> ready{false};
  std::atomic<bool> draining{false};
  std::unique_ptr<Engine> engine;  // set once, before `ready`
  ModelInfo info;
  std::optional<ChatPrompt> chat;
  ServeModel model;  // what serving needs of the engine and the template (pipeline.h), at Attach
  int64_t created = 0;
  Metrics metrics;
  std::mutex jobs_mu;
  std::condition_variable jobs_cv;
  int admitted = 0;  // generation requests in flight, under jobs_mu
  std::set<std::shared_ptr<Job>> jobs;
  std::mutex log_mu;
  std::once_flag shutdown_once;
  bool drained = true;  // Shutdown finished every request without cancelling one
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopped = false;  // every connection closed (Wait returns)

  // One answer in progress: its job and the collector that folds its events,
  // the wire format that writes it, and the record committed before it;
  // shared by a stream's content provider and its releaser.
  struct Answer {
    std::shared_ptr<Job> job;
    std::shared_ptr<Collector> coll;
    std::unique_ptr<WireFormat> format;
    RecordFn record;  // --record; null: off
    bool finalized = false;
  };

  // A request's place under --max-queue, taken before its expensive work
  // (tokenizing, rendering) so that refused requests cost nothing; given back
  // when dropped, unless Serve took it.
  class Slot {
   public:
    Slot(Impl* impl, std::shared_ptr<Job> job) : impl_(impl), job_(std::move(job)) {}
    Slot(Slot&& o) noexcept : impl_(o.impl_), job_(std::move(o.job_)) {}
    Slot& operator=(Slot&&) = delete;
    ~Slot() {
      if (job_) impl_->Release(job_);
    }
    explicit operator bool() const { return job_ != nullptr; }
    std::shared_ptr<Job> Take() { return std::move(job_); }

   private:
    Impl* impl_;
    std::shared_ptr<Job> job_;
  };

  // routes.cc: registers every row of RouteTable() (routes.h) and the hooks around them.
  void Routes();
  // routes.cc: host, method, key, framing and Content-Type, before any body byte is read.
  std::optional<ApiError> Gate(const httplib::Request& req) const;
  // routes.cc: reads the body (at most --max-body-bytes, decoded) and hands the request on.
  void WithBody(const httplib::Request& req, httplib::Response& res,
                const httplib::ContentReader& read,
                void (Impl::*handle)(const httplib::Request&, httplib::Response&));

  // server.cc
  bool Authorized(const httplib::Request& req) const;
  // The index of the --api-key the request presents; -1 when none matches.
  int KeyIndex(const httplib::Request& req) const;
  // The engine's prefix-cache scope for a request: with several API keys, one
  // per key; a cache_salt field narrows it further. 0 (shared) otherwise.
  uint64_t CacheSalt(const httplib::Request& req, const std::string& cache_salt) const;
  // A slot under --max-queue, or an empty one after answering 429 (or 503 when draining).
  Slot AdmitOrRefuse(httplib::Response& res);
  void LogRequest(const httplib::Request& req, const httplib::Response& res);
  bool Admit(const std::shared_ptr<Job>& job);
  void Release(const std::shared_ptr<Job>& job);
  void Account(const Collector& coll);
  void CancelAndWait(Job& job, Collector& coll);
  void EndJob(const std::shared_ptr<Job>& job, Collector& coll);
  void FinishAnswer(Answer& a);

  // serve.cc: the one path of every generation endpoint (Serve), and its steps.
  void Serve(const httplib::Request& req, httplib::Response& res,
             const std::function<ApiOr<GenerationRequest>(const Json& body)>& parse);
  ResponseMeta Meta(uint64_t seed) const;
  // One engine request per prompt; a refusal is returned (the job released).
  std::optional<ApiError> Submit(std::vector<RequestParams> params, PieceFn raw_piece,
                                 const char* prompt_param, Answer& a);
  // Commits the record of a finished answer (--record); a 500 when the store refuses.
  std::optional<ApiError> Commit(const Answer& a);
  void AnswerWhole(Answer& a, httplib::Response& res);
  void AnswerStream(std::shared_ptr<Answer> a, httplib::Response& res);
  // Writes the stream; false when the client went away (or the record failed).
  bool StreamEvents(Answer& a, httplib::DataSink& sink);

  // endpoints.cc
  void HandleCompletions(const httplib::Request& req, httplib::Response& res);
  void HandleChat(const httplib::Request& req, httplib::Response& res);
  void HandleModels(const httplib::Request& req, httplib::Response& res);
  void HandleHealth(const httplib::Request& req, httplib::Response& res);
  void HandleMetrics(const httplib::Request& req, httplib::Response& res);
  Json ModelJson() const;

  // endpoints_api.cc
  void HandleResponses(const httplib::Request& req, httplib::Response& res);
  void HandleTokenize(const httplib::Request& req, httplib::Response& res);
  void HandleDetokenize(const httplib::Request& req, httplib::Response& res);
  void HandleApplyTemplate(const httplib::Request& req, httplib::Response& res);
  void HandleTokenizerInfo(const httplib::Request& req, httplib::Response& res);
  TokenizerView TokenizerViewOf() const;  // the tokenizer endpoints' view, with their bounds
  // The tokenizer endpoints' one path: admitted under --max-queue before any parsing or
  // tokenizing, then body(request body, TokenizerViewOf(), template clock) answers.
  using TokenizerBodyFn = std::function<ApiOr<Json>(const Json& body, const TokenizerView& v,
                                                    std::optional<int64_t> now_unix)>;
  void AnswerWithTokenizer(const httplib::Request& req, httplib::Response& res,
                           const TokenizerBodyFn& body);
};

}  // namespace stet::server
