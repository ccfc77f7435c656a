// UpstreamCall over curl_multi: Pump() alternates curl_multi_perform and
// curl_multi_poll (at most 100 ms per wait) until the awaited event (headers,
// or body bytes) happens, the transfer ends, or the upstream timeout passes
// since the last progress. Header lines are collected per response: a new
// status line (100 Continue, a redirect) starts the list afresh.
#include "forensics/client/upstream.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace stet::forensics {

namespace {

struct ThreadCurl {
  CURLM* multi = nullptr;
  CURL* easy = nullptr;
  ThreadCurl() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    multi = curl_multi_init();
    easy = curl_easy_init();
  }
  ~ThreadCurl() {
    if (easy) curl_easy_cleanup(easy);
    if (multi) curl_multi_cleanup(multi);
  }
};

ThreadCurl& ThisThreadCurl() {
  thread_local ThreadCurl tc;
  return tc;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r' || s[b - 1] == '\n'))
    --b;
  return s.substr(a, b - a);
}

}  // namespace

struct UpstreamCallbacks {
  static size_t Write(char* ptr, size_t size, size_t nmemb, void* user) {
    auto* c = static_cast<UpstreamCall*>(user);
    c->buffer_.append(ptr, size * nmemb);
    return size * nmemb;
  }
  static size_t Header(char* ptr, size_t size, size_t nmemb, void* user) {
    auto* c = static_cast<UpstreamCall*>(user);
    const std::string line(ptr, size * nmemb);
    if (line.rfind("HTTP/", 0) == 0) {
      c->headers_.clear();
      const size_t sp = line.find(' ');
      c->status_ = sp == std::string::npos ? 0 : std::strtol(line.c_str() + sp + 1, nullptr, 10);
    } else if (line == "\r\n" || line == "\n") {
      if (c->status_ >= 200 && !c->headers_done_) {
        c->headers_done_ = true;
        c->headers_s_ =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - c->start_).count();
      }
    } else {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        c->headers_.emplace_back(Trim(line.substr(0, colon)), Trim(line.substr(colon + 1)));
      }
    }
    return size * nmemb;
  }
};

UpstreamCall::~UpstreamCall() { Abort(); }

void UpstreamCall::Abort() {
  if (attached_) {
    curl_multi_remove_handle(static_cast<CURLM*>(multi_), static_cast<CURL*>(curl_));
    attached_ = false;
  }
  if (slist_) {
    curl_slist_free_all(static_cast<curl_slist*>(slist_));
    slist_ = nullptr;
  }
}

void UpstreamCall::Fail(Failure f, std::string message) {
  if (failure_ == Failure::kNone) {
    failure_ = f;
    error_ = std::move(message);
  }
  Abort();
}

bool UpstreamCall::Start(const std::string& method, const std::string& url,
                         const HeaderList& headers, const std::string& body,
                         const UpstreamLimits& limits) {
  ThreadCurl& tc = ThisThreadCurl();
  if (!tc.multi || !tc.easy) {
    Fail(Failure::kBroken, "curl could not be initialised");
    return false;
  }
  curl_ = tc.easy;
  multi_ = tc.multi;
  limits_ = limits;
  url_ = url;
  body_ = body;
  CURL* c = tc.easy;
  curl_easy_reset(c);
  curl_slist* sl = nullptr;
  for (const auto& [k, v] : headers) sl = curl_slist_append(sl, (k + ": " + v).c_str());
  sl = curl_slist_append(sl,
                         "Expect:");  // no 100-continue round trip (curl adds it for large bodies)
  slist_ = sl;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, sl);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(limits.connect_timeout_ms));
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // curl decodes; the client gets identity
  curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &UpstreamCallbacks::Write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, this);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &UpstreamCallbacks::Header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, this);
  if (method == "GET") {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else if (method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body_.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body_.size()));
    if (method != "POST") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  start_ = last_progress_ = std::chrono::steady_clock::now();
  if (curl_multi_add_handle(tc.multi, c) != CURLM_OK) {
    Fail(Failure::kBroken, "curl_multi_add_handle failed");
    return false;
  }
  attached_ = true;
  if (Pump(true, 0) == Pumped::kTimeout) {
    Fail(Failure::kTimeout, "no response headers from " + url + " within " +
                                std::to_string(limits_.timeout_ms / 1000.0).substr(0, 6) +
                                " s (--upstream-timeout)");
    return false;
  }
  if (!headers_done_) {  // the transfer ended without a response
    const auto rc = static_cast<CURLcode>(result_);
    const bool unreachable = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
                             rc == CURLE_COULDNT_RESOLVE_PROXY || rc == CURLE_SSL_CONNECT_ERROR;
    const bool slow = rc == CURLE_OPERATION_TIMEDOUT;
    Fail(slow          ? Failure::kTimeout
         : unreachable ? Failure::kUnreachable
                       : Failure::kBroken,
         std::string(slow ? "connecting to " : "request to ") + url +
             " failed: " + curl_easy_strerror(rc));
    return false;
  }
  return true;
}

UpstreamCall::Pumped UpstreamCall::Pump(bool want_headers, int64_t slice_ms) {
  CURLM* m = static_cast<CURLM*>(multi_);
  const auto timeout = std::chrono::milliseconds(limits_.timeout_ms);
  const auto slice_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(slice_ms);
  size_t seen = buffer_.size();
  for (;;) {
    int running = 0;
    curl_multi_perform(m, &running);
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(m, &queued)) {
      if (msg->msg == CURLMSG_DONE && msg->easy_handle == curl_) {
        done_ = true;
        result_ = msg->data.result;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (buffer_.size() != seen) {  // progress (body bytes, also while waiting for headers)
      seen = buffer_.size();
      last_progress_ = now;
    }
    if (done_) return Pumped::kReady;
    if (want_headers ? headers_done_ : !buffer_.empty()) return Pumped::kReady;
    const auto deadline = last_progress_ + timeout;
    if (now >= deadline) return Pumped::kTimeout;
    if (slice_ms > 0 && now >= slice_end) return Pumped::kSlice;
    auto until = slice_ms > 0 ? std::min(deadline, slice_end) : deadline;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count();
    curl_multi_poll(m, nullptr, 0, static_cast<int>(std::clamp<int64_t>(left, 1, 100)), nullptr);
  }
}

UpstreamCall::Next UpstreamCall::Read(std::string* out, int64_t slice_ms) {
  if (buffer_.empty() && !done_) {
    if (!attached_) return Next::kFailed;
    const Pumped p = Pump(false, slice_ms);
    if (p == Pumped::kSlice) return Next::kIdle;
    if (p == Pumped::kTimeout) {
      Fail(Failure::kTimeout, "the upstream sent nothing for " +
                                  std::to_string(limits_.timeout_ms / 1000) +
                                  " s mid-answer (--upstream-timeout)");
      return Next::kFailed;
    }
  }
  if (!buffer_.empty()) {
    out->append(buffer_);
    buffer_.clear();
    return Next::kData;
  }
  if (result_ != CURLE_OK) {
    Fail(Failure::kBroken, "the upstream connection broke mid-answer: " +
                               std::string(curl_easy_strerror(static_cast<CURLcode>(result_))));
    return Next::kFailed;
  }
  Abort();  // finished: the connection goes back to this thread's pool
  return Next::kEnd;
}

bool UpstreamCall::ReadAll(std::string* out, size_t max_bytes) {
  for (;;) {
    switch (Read(out)) {
      case Next::kData:
        if (out->size() > max_bytes) {
          out->resize(max_bytes);
          Fail(Failure::kTooLarge, "the upstream's answer is larger than the " +
                                       std::to_string(max_bytes) + " bytes this proxy relays");
          return false;
        }
        continue;
      case Next::kEnd:
        return true;
      case Next::kFailed:
        return false;
      case Next::kIdle:
        continue;
    }
  }
}

std::string UpstreamCall::Header(const std::string& lower_name) const {
  for (const auto& [k, v] : headers_) {
    if (Lower(k) == lower_name) return v;
  }
  return "";
}

}  // namespace stet::forensics
