// The proxy's side toward the upstream endpoint: one HTTP exchange over
// libcurl's multi interface, driven by the calling worker thread, so the
// status line and headers are known before the first body byte is relayed and
// each body piece is handed on the moment curl has it (no buffering beyond
// what one read returns). Each worker thread keeps its own curl handles, so
// upstream connections are reused across its requests. Invariants: no wait
// exceeds the connect timeout or the upstream timeout (the longest silence
// allowed, before the headers and between body bytes); a failure says whether
// the upstream was unreachable (502) or too slow (504).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace stet::forensics {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct UpstreamLimits {
  int64_t connect_timeout_ms = 10000;
  int64_t timeout_ms = 300000;  // longest wait for the headers, and between body bytes
};

class UpstreamCall {
 public:
  enum class Failure { kNone, kUnreachable, kTimeout, kBroken, kTooLarge };
  enum class Next { kData, kEnd, kFailed, kIdle };

  UpstreamCall() = default;
  ~UpstreamCall();  // an unfinished transfer is aborted
  UpstreamCall(const UpstreamCall&) = delete;
  UpstreamCall& operator=(const UpstreamCall&) = delete;

  // Sends the request; returns once the response's status and headers are in
  // (true) or the exchange failed (false: see failure()).
  bool Start(const std::string& method, const std::string& url, const HeaderList& headers,
             const std::string& body, const UpstreamLimits& limits);
  long status() const { return status_; }
  const HeaderList& headers() const { return headers_; }
  std::string Header(const std::string& lower_name) const;  // "" when absent

  // Waits for the next body bytes and appends them to *out (kData); kEnd once
  // the body is complete; kFailed on a broken transfer or the upstream timeout.
  // With slice_ms > 0, returns kIdle after that long without bytes (the
  // upstream timeout still counts from the last bytes), so a caller can check
  // its own client meanwhile.
  Next Read(std::string* out, int64_t slice_ms = 0);
  // Reads the rest of the body into *out; past `max_bytes` the transfer is
  // aborted, *out keeps the first `max_bytes` and the failure is kTooLarge.
  bool ReadAll(std::string* out, size_t max_bytes = SIZE_MAX);
  // Ends the transfer as failed with `f` (the caller found the answer unacceptable).
  void FailWith(Failure f, std::string message) { Fail(f, std::move(message)); }
  void Abort();  // stops the transfer (the client went away)

  Failure failure() const { return failure_; }
  const std::string& error() const { return error_; }
  double headers_seconds() const { return headers_s_; }  // request sent -> headers in

 private:
  friend struct UpstreamCallbacks;
  enum class Pumped { kReady, kTimeout, kSlice };
  Pumped Pump(bool want_headers, int64_t slice_ms);
  void Fail(Failure f, std::string message);

  void* curl_ = nullptr;  // CURL* of this thread, while attached
  void* multi_ = nullptr;
  void* slist_ = nullptr;
  bool attached_ = false;
  bool done_ = false;
  int result_ = 0;  // CURLcode
  bool headers_done_ = false;
  long status_ = 0;
  HeaderList headers_;
  std::string buffer_;
  std::string body_;  // the request body (curl reads it during the transfer)
  UpstreamLimits limits_;
  std::chrono::steady_clock::time_point start_, last_progress_;
  double headers_s_ = -1;
  Failure failure_ = Failure::kNone;
  std::string error_;
  std::string url_;
};

}  // namespace stet::forensics
