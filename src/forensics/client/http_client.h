// A small HTTP client over libcurl for talking to OpenAI-compatible servers:
// JSON POST, GET, and streaming server-sent events. One HttpClient owns one
// CURL easy handle and is used by one thread at a time; WorkerPool gives each
// worker thread its own client, so concurrency never shares a handle.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "wire/sse.h"

namespace stet::forensics {

// Read through the OpenAI wire module (src/wire).
using wire::IsDoneEvent;
using wire::SseEvent;
using wire::SseParser;

struct HttpOptions {
  std::string api_key;          // sent as "Authorization: Bearer <key>" when non-empty
  int64_t timeout_ms = 300000;  // whole request, including a streamed body
  int64_t connect_timeout_ms = 10000;
  const std::atomic<bool>* cancel = nullptr;  // when set and true, transfers stop (kCancelled)
};

struct HttpResponse {
  long status = 0;  // HTTP status code
  std::string body;
  double seconds = 0;  // wall time of the transfer
};

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Transport failures (refused, timed out, cancelled) are errors; any HTTP
  // status comes back as a response — callers decide what a 4xx/5xx means.
  Result<HttpResponse> Get(const std::string& url);
  Result<HttpResponse> PostJson(const std::string& url, const std::string& body);

  // POSTs `body` and delivers each SSE event's data as it arrives, stopping at
  // `data: [DONE]` (not delivered) or when on_data returns false. A non-2xx
  // status is an error carrying the (non-streamed) body.
  Status PostSse(const std::string& url, const std::string& body,
                 const std::function<bool(const std::string& data)>& on_data,
                 HttpResponse* meta = nullptr);

  // Lets a job on a pooled client make its own transfers cancellable.
  void set_cancel(const std::atomic<bool>* cancel) { options_.cancel = cancel; }

 private:
  Status Perform(const std::string& url, const std::string* body, bool sse,
                 const std::function<bool(const std::string&)>* on_data, HttpResponse* resp);

  HttpOptions options_;
  void* curl_;  // CURL*, kept opaque so users need no curl headers
};

// Turns a non-2xx response into a Status naming the URL and the server's message.
Status HttpStatusError(const std::string& url, const HttpResponse& r);

// "http://h:p", "http://h:p/", "http://h:p/v1" -> "http://h:p/v1/<path>".
std::string EndpointUrl(const std::string& base, const std::string& path);

// N threads, each with its own HttpClient, draining one FIFO of jobs.
class WorkerPool {
 public:
  WorkerPool(int n_workers, const HttpOptions& options);
  ~WorkerPool();  // waits for queued jobs
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return static_cast<int>(threads_.size()); }
  void Submit(std::function<void(HttpClient&)> job);
  void Wait();  // returns when the queue is empty and every worker is idle

 private:
  void Loop(int index);

  std::vector<std::unique_ptr<HttpClient>> clients_;
  std::vector<std::thread> threads_;
  std::deque<std::function<void(HttpClient&)>> queue_;
  std::mutex mu_;
  std::condition_variable cv_work_, cv_idle_;
  int busy_ = 0;
  bool stop_ = false;
};

}  // namespace stet::forensics
