// libcurl is initialised once per process (curl_global_init is not thread-safe);
// each transfer sets CURLOPT_NOSIGNAL because timeouts must not use signals in
// a multi-threaded program.
#include "forensics/client/http_client.h"

#include <curl/curl.h>

#include <chrono>
#include <cstdio>
#include <mutex>

namespace stet::forensics {

namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  CURL* curl = nullptr;
  bool sse = false;
  const std::function<bool(const std::string&)>* on_data = nullptr;
  SseParser parser;
  std::vector<SseEvent> events;
  std::string* body = nullptr;
  bool stopped = false;  // on_data asked to stop, or [DONE] arrived
  bool status_known = false;
  bool streaming = false;  // 2xx: parse as SSE; otherwise keep the body for the error
  const std::atomic<bool>* cancel = nullptr;
};

bool Deliver(Transfer* t) {
  for (const SseEvent& e : t->events) {
    if (IsDoneEvent(e) || !(*t->on_data)(e.data)) {
      t->stopped = true;
      break;
    }
  }
  t->events.clear();
  return !t->stopped;
}

size_t WriteCb(char* ptr, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  if (t->sse && !t->status_known) {
    long code = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
    t->streaming = code >= 200 && code < 300;
    t->status_known = true;
  }
  if (!t->streaming) {
    t->body->append(ptr, n);
    return n;
  }
  if (t->stopped) return 0;
  t->parser.Feed(std::string_view(ptr, n), &t->events);
  if (!Deliver(t)) return 0;  // stops the transfer; not an error (see Perform)
  return n;
}

int ProgressCb(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return (t->cancel && t->cancel->load(std::memory_order_relaxed)) ? 1 : 0;
}

}  // namespace

HttpClient::HttpClient(HttpOptions options) : options_(std::move(options)) {
  GlobalInit();
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() {
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

Result<HttpResponse> HttpClient::Get(const std::string& url) {
  HttpResponse r;
  STET_RETURN_IF_ERROR(Perform(url, nullptr, false, nullptr, &r));
  return r;
}

Result<HttpResponse> HttpClient::PostJson(const std::string& url, const std::string& body) {
  HttpResponse r;
  STET_RETURN_IF_ERROR(Perform(url, &body, false, nullptr, &r));
  return r;
}

Status HttpClient::PostSse(const std::string& url, const std::string& body,
                           const std::function<bool(const std::string&)>& on_data,
                           HttpResponse* meta) {
  HttpResponse r;
  STET_RETURN_IF_ERROR(Perform(url, &body, true, &on_data, &r));
  if (r.status < 200 || r.status >= 300) return HttpStatusError(url, r);
  if (meta) *meta = std::move(r);
  return Status::Ok();
}

Status HttpClient::Perform(const std::string& url, const std::string* body, bool sse,
                           const std::function<bool(const std::string&)>* on_data,
                           HttpResponse* resp) {
  CURL* c = static_cast<CURL*>(curl_);
  if (!c) return Internal("curl_easy_init failed");
  curl_easy_reset(c);  // keeps the connection cache, forgets the last request's options
  Transfer t;
  t.curl = c;
  t.sse = sse;
  t.on_data = on_data;
  t.body = &resp->body;
  t.cancel = options_.cancel;
  t.streaming = false;

  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  headers =
      curl_slist_append(headers, sse ? "Accept: text/event-stream" : "Accept: application/json");
  std::string auth;
  if (!options_.api_key.empty()) {
    auth = "Authorization: Bearer " + options_.api_key;
    headers = curl_slist_append(headers, auth.c_str());
  }
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout_ms));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_ms));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &WriteCb);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &ProgressCb);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "stet-forensics/0.1");
  if (body) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const CURLcode rc = curl_easy_perform(c);
  resp->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  curl_slist_free_all(headers);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);

  if (rc == CURLE_WRITE_ERROR && t.stopped) return Status::Ok();
  if (rc == CURLE_ABORTED_BY_CALLBACK) return Cancelled("request to " + url + " cancelled");
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    return ResourceExhausted("request to " + url + " timed out after " +
                             std::to_string(options_.timeout_ms) + " ms");
  }
  if (rc != CURLE_OK) {
    return IoError("request to " + url + " failed: " + curl_easy_strerror(rc));
  }
  if (sse && t.streaming && !t.stopped) {
    t.parser.Finish(&t.events);
    Deliver(&t);
  }
  return Status::Ok();
}

Status HttpStatusError(const std::string& url, const HttpResponse& r) {
  std::string snippet = r.body.substr(0, 400);
  for (char& ch : snippet) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  const std::string msg =
      "HTTP " + std::to_string(r.status) + " from " + url + (snippet.empty() ? "" : ": " + snippet);
  if (r.status == 401 || r.status == 403) return InvalidArgument(msg + " (check --api-key)");
  if (r.status == 404) return NotFound(msg);
  if (r.status == 429 || r.status == 503) return ResourceExhausted(msg);
  if (r.status >= 400 && r.status < 500) return InvalidArgument(msg);
  return Internal(msg);
}

std::string EndpointUrl(const std::string& base, const std::string& path) {
  std::string b = base;
  while (!b.empty() && b.back() == '/') b.pop_back();
  if (b.size() >= 3 && b.compare(b.size() - 3, 3, "/v1") == 0) b.resize(b.size() - 3);
  std::string p = path;
  if (!p.empty() && p[0] == '/') p.erase(0, 1);
  return b + "/v1/" + p;
}

WorkerPool::WorkerPool(int n_workers, const HttpOptions& options) {
  if (n_workers < 1) n_workers = 1;
  for (int i = 0; i < n_workers; ++i) clients_.push_back(std::make_unique<HttpClient>(options));
  for (int i = 0; i < n_workers; ++i) threads_.emplace_back([this, i] { Loop(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_idle_.wait(lock, [&] { return queue_.empty() && busy_ == 0; });
    stop_ = true;
  }
  cv_work_.notify_all();
  for (auto& th : threads_) th.join();
}

void WorkerPool::Submit(std::function<void(HttpClient&)> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  cv_work_.notify_one();
}

void WorkerPool::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_idle_.wait(lock, [&] { return queue_.empty() && busy_ == 0; });
}

void WorkerPool::Loop(int index) {
  HttpClient& client = *clients_[index];
  for (;;) {
    std::function<void(HttpClient&)> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
      ++busy_;
    }
    job(client);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
    }
    cv_idle_.notify_all();
  }
}

}  // namespace stet::forensics
