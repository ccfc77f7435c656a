// The connections of `stet serve`, under cpp-httplib's request parser: one poll
// thread accepts, waits out keep-alive idle time and reads each request's
// headers, so a client that trickles bytes costs a socket, never a worker; a
// request whose headers are complete goes to a worker pool, GET/HEAD to a small
// reserved one (so /health and /metrics answer while every other worker is busy).
// Invariants: headers are bounded by a total deadline and a size cap, bodies by
// the deadline BeginBody sets, idle connections by the keep-alive timeout, and
// Stop() returns only once every connection is closed and every worker joined.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace stet::server {

using ConnClock = std::chrono::steady_clock;

struct ConnLimits {
  std::chrono::milliseconds header_timeout{10000};  // first byte of a request -> end of its headers
  std::chrono::milliseconds body_timeout{60000};    // end of the headers -> end of the body
  // After body_grace, a body must have averaged body_min_rate bytes/s since its
  // headers (else 408), so a trickled body holds a worker seconds, not the
  // whole body_timeout. 0: no minimum.
  size_t body_min_rate = 1024;
  std::chrono::milliseconds body_grace{5000};
  std::chrono::milliseconds idle_timeout{2000};  // keep-alive: end of a response -> next request
  std::chrono::milliseconds io_timeout{
      10000};                              // longest wait for one read or write to make progress
  std::chrono::milliseconds linger{2000};  // unread input discarded after an error response
  // Stop(): how long the connections workers hold get to finish writing their
  // answers (a drain's cancelled requests answer just before Stop) before they are shut.
  std::chrono::milliseconds stop_grace{1000};
  size_t max_header_bytes = 32u << 10;  // request line + headers; more gets 431
  int workers = 16;                     // requests served at once (POST and the rest)
  int light_workers = 4;                // reserved for GET and HEAD
  int max_requests_per_connection = 100;
  int max_connections = 0;  // open at once; 0: RLIMIT_NOFILE less a margin, at most 4096
  // Open at once from one client address (loopback exempt: a local reverse
  // proxy carries everyone's); more get 503. 0: no cap.
  int max_connections_per_client = 256;
  // Which requests go to the light_workers pool, judged on the request line
  // ("GET /health HTTP/1.1"); null: GET and HEAD.
  std::function<bool(std::string_view request_line)> light;
};

// Flags a request's handler code sets for its connection. Thread-local: a
// request is read, handled and answered on one worker.
struct ConnRequestFlags {
  bool close_after = false;   // the answer says "Connection: close": close once it is written
  bool deadline_hit = false;  // a read ran past the header or body deadline
  int fd = -1;                // the connection's socket, while a worker serves it
};
ConnRequestFlags& CurrentConnRequest();

// The client of the request this worker serves has closed its connection (or
// it failed): an EOF or error is waiting, not just more bytes (a pipelined
// request). A non-streamed answer polls this to cancel work nobody awaits.
bool CurrentClientGone();

// The answer closes its connection: the request's body may be unread, or its
// framing broken, so nothing after it on the connection can be trusted.
void CloseAfter(httplib::Response& res);

struct Conn;  // one client connection (http_conn.cc)

// httplib::Stream over a connection: bytes the poll thread already read come
// first; reads wait at most until the phase's deadline (headers, then body once
// BeginBody is called) and io_timeout per read; writes write everything or fail.
class ConnStream final : public httplib::Stream {
 public:
  ConnStream(Conn& conn, const ConnLimits& limits);
  void BeginBody();  // the headers are parsed: the body deadline starts now

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override;
  bool wrote() const { return wrote_; }  // any byte of an answer sent

 private:
  bool WaitReadable() const;  // false: deadline, io timeout or error

  Conn& conn_;
  const ConnLimits& limits_;
  ConnClock::time_point deadline_;
  bool wrote_ = false;
  bool in_body_ = false;
  ConnClock::time_point body_start_;
  size_t body_bytes_ = 0;
};

// Serves one request (httplib's process_request); false: close the connection.
using ServeFn =
    std::function<bool(ConnStream& strm, bool close_connection, bool& connection_closed)>;
// Called for each request the loop answers itself (408, 431, 503), for metrics.
using RejectFn = std::function<void(int status)>;

class ConnectionLoop {
 public:
  // `listen_fd` is bound and listening; the loop reads it but does not own it.
  ConnectionLoop(int listen_fd, ConnLimits limits, ServeFn serve, RejectFn on_reject);
  ~ConnectionLoop();  // Stop()
  ConnectionLoop(const ConnectionLoop&) = delete;
  ConnectionLoop& operator=(const ConnectionLoop&) = delete;

  void Start();
  // No new connections (the listener is shut down) and every connection that is
  // not in a request is closed; requests being served run on and then close.
  void StopAccepting();
  // Waits up to stop_grace for the workers to finish the answers they are
  // writing, shuts down every remaining connection (reads and writes on them
  // fail at once), then joins the poll thread and the workers. Idempotent.
  void Stop();

 private:
  class Pool;
  void PollLoop();
  void Accept();
  std::shared_ptr<std::atomic<int>> ClientSlot(const std::string& key);  // per_client_
  void OnReadable(std::unique_ptr<Conn>& c);
  void Expire(std::unique_ptr<Conn>& c);
  void Dispatch(std::unique_ptr<Conn> c);
  void Reject(std::unique_ptr<Conn>& c, int status);
  void Work(std::unique_ptr<Conn> c);
  void HandBack(std::unique_ptr<Conn> c);  // worker -> poll thread (keep-alive or linger)
  void CloseBusy(std::unique_ptr<Conn> c);
  void TakeHandedBack(ConnClock::time_point now);
  void Wake();

  const int listen_fd_;
  const ConnLimits limits_;
  const ServeFn serve_;
  const RejectFn on_reject_;
  int wake_fd_ = -1;
  int max_connections_ = 0;
  const std::string out_of_memory_;  // made at start: sending it needs no allocation
  std::thread poller_;
  std::unique_ptr<Pool> pool_, light_pool_;

  std::atomic<bool> accepting_{true};
  std::atomic<bool> stopping_{false};
  std::once_flag stop_once_;

  // Owned by the poll thread.
  std::vector<std::unique_ptr<Conn>> polled_;
  ConnClock::time_point accept_paused_until_{};
  bool listener_shut_ = false;

  std::mutex mu_;  // guards the three below
  std::vector<std::unique_ptr<Conn>> handed_back_;
  std::unordered_set<int> busy_fds_;  // connections a worker holds or will take
  std::condition_variable busy_cv_;   // busy_fds_ lost one
  bool poller_done_ = false;
  std::atomic<int> open_{0};  // connections open (polled, queued, served)
  // Open connections per client address (poll thread only; each Conn holds its
  // address's counter and gives it back when it closes, on any thread).
  std::unordered_map<std::string, std::weak_ptr<std::atomic<int>>> per_client_;
};

}  // namespace stet::server
