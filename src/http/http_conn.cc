// Connections of `stet serve`: the poll thread (accept, keep-alive idle, request
// headers, lingering close), the two worker pools and ConnStream. Owns the
// deadlines: no client byte pattern keeps a worker past the body deadline or a
// socket past the header deadline, and Stop() cannot wait on a client.
#include "http/http_conn.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "http/api_error.h"
#include "http/http_gate.h"

namespace stet::server {

namespace {

constexpr size_t kReadChunk = 16384;  // one recv into the connection's buffer
constexpr size_t kDirectRead = 4096;  // reads this large go straight into the caller's buffer
constexpr int kAcceptsPerWake = 64;   // then the other connections get their turn
constexpr int kLingerReadsPerWake = 16;
constexpr auto kAcceptPause = std::chrono::milliseconds(100);  // out of file descriptors

thread_local ConnRequestFlags t_flags;

int MillisUntil(ConnClock::time_point t, ConnClock::time_point now) {
  if (t <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - now).count();
  return static_cast<int>(std::min<int64_t>(ms, 1000));
}

// Each open connection may hold a header block (max_header_bytes) in memory:
// the cap bounds that too (4096 x 32 KiB).
constexpr int kMaxConnectionsCap = 4096;

int MaxConnections(int configured) {
  if (configured > 0) return configured;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return kMaxConnectionsCap;
  // Leave descriptors for the model, the record store, logs and the listener.
  return static_cast<int>(std::clamp<rlim_t>(rl.rlim_cur, 128, kMaxConnectionsCap + 64) - 64);
}

const char* Reason(int status) {
  switch (status) {
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 400:
      return "Bad Request";
    default:
      return "Service Unavailable";
  }
}

// A whole HTTP answer for `e` that closes the connection: what the poll thread sends itself.
std::string CannedAnswer(const ApiError& e) {
  const std::string body = ErrorBody(e);
  return "HTTP/1.1 " + std::to_string(e.status) + " " + Reason(e.status) +
         "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The answer the poll thread sends itself, with an OpenAI-shaped body.
std::string CannedResponse(int status, const ConnLimits& limits, bool per_client = false) {
  ApiError e;
  e.status = status;
  if (status == 408) {
    e.code = "request_timeout";
    e.message = "The request headers did not arrive in time (--header-timeout " +
                std::to_string(limits.header_timeout.count() / 1000) + " s, --read-timeout " +
                std::to_string(limits.io_timeout.count() / 1000) + " s between reads).";
  } else if (status == 431) {
    e.code = "request_header_fields_too_large";
    e.message = "The request line and headers exceed " + std::to_string(limits.max_header_bytes) +
                " bytes.";
  } else if (status == 400) {
    e.code = "malformed_header";
    e.message =
        "A header line is malformed: whitespace between a field name and its colon, a line "
        "folded onto the one before it, or a line without a colon (RFC 9112 section 5).";
  } else if (per_client) {
    e.type = "server_error";
    e.code = "too_many_connections";
    e.message = "This client address has " + std::to_string(limits.max_connections_per_client) +
                " connections open already (--max-connections-per-client); retry later.";
  } else {
    e.type = "server_error";
    e.code = "too_many_connections";
    e.message = "The server has too many open connections; retry later.";
  }
  return CannedAnswer(e);
}

// The answer to a request whose serving ran out of memory outside a handler
// (httplib's own buffers); handlers' bad_alloc is the server's 503 already.
std::string OutOfMemoryResponse() {
  ApiError e;
  e.status = 503;
  e.type = "server_error";
  e.code = "out_of_memory";
  e.message =
      "The server ran out of memory for this request; it was dropped and the server "
      "goes on. Retry later or send a smaller request.";
  return CannedAnswer(e);
}

void SendOnce(int fd, const std::string& s) {
  // Best effort on a non-blocking socket: a client that does not read loses it.
  (void)::send(fd, s.data(), s.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

ConnRequestFlags& CurrentConnRequest() { return t_flags; }

bool CurrentClientGone() {
  const int fd = t_flags.fd;
  if (fd < 0) return false;
  pollfd p{fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return true;
  char byte;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

void CloseAfter(httplib::Response& res) {
  res.set_header("Connection", "close");
  t_flags.close_after = true;
}

struct Conn {
  enum class State { kIdle, kHeaders, kLinger };
  ~Conn() {
    if (client_open) --*client_open;
  }
  std::shared_ptr<std::atomic<int>> client_open;  // this client address's open connections
  int fd = -1;
  State state = State::kIdle;
  ConnClock::time_point deadline;
  ConnClock::time_point headers_since;  // first byte of the request being read
  std::string in;                       // received, not yet consumed (from `pos`)
  size_t pos = 0;
  int served = 0;

  size_t pending() const { return in.size() - pos; }
  // httplib ends the headers at a line that is exactly CRLF; every line before
  // it ends in LF. An empty request line is complete too (httplib answers 400).
  bool HeadersComplete() const {
    return in.compare(pos, 2, "\r\n") == 0 || in.find("\n\r\n", pos) != std::string::npos;
  }
  bool Light(const ConnLimits& limits) const {
    if (!limits.light) return in.compare(pos, 4, "GET ") == 0 || in.compare(pos, 5, "HEAD ") == 0;
    const size_t eol = in.find('\n', pos);
    return limits.light(
        std::string_view(in).substr(pos, eol == std::string::npos ? eol : eol - pos));
  }
  void Compact() {
    in.erase(0, pos);
    pos = 0;
  }
};

// ---------------------------------------------------------------------------

ConnStream::ConnStream(Conn& conn, const ConnLimits& limits)
    : conn_(conn), limits_(limits), deadline_(ConnClock::now() + limits.header_timeout) {}

void ConnStream::BeginBody() {
  body_start_ = ConnClock::now();
  deadline_ = body_start_ + limits_.body_timeout;
  in_body_ = true;
  body_bytes_ = 0;
}

bool ConnStream::WaitReadable() const {
  const auto start = ConnClock::now();
  auto until = std::min(deadline_, start + limits_.io_timeout);
  if (in_body_ && limits_.body_min_rate > 0) {
    // The moment the bytes so far fall below the minimum average rate.
    const auto earned = std::chrono::milliseconds(body_bytes_ * 1000 / limits_.body_min_rate);
    until =
        std::min(until, body_start_ + std::max<ConnClock::duration>(limits_.body_grace, earned));
  }
  for (;;) {
    const auto now = ConnClock::now();
    if (now >= until) {
      t_flags.deadline_hit = true;
      return false;
    }
    pollfd p{conn_.fd, POLLIN, 0};
    const int r = ::poll(&p, 1, MillisUntil(until, now));
    if (r > 0) return true;  // data, EOF or an error: recv says which
    if (r < 0 && errno != EINTR) return false;
  }
}

bool ConnStream::is_readable() const { return conn_.pending() > 0 || WaitReadable(); }

bool ConnStream::is_writable() const {
  pollfd p{conn_.fd, POLLOUT, 0};
  int r;
  do {
    r = ::poll(&p, 1, static_cast<int>(limits_.io_timeout.count()));
  } while (r < 0 && errno == EINTR);
  if (r <= 0 || (p.revents & (POLLERR | POLLNVAL))) return false;
  // Writable is not alive: a client that went away shows as EOF on a peek.
  char b;
  const ssize_t n = ::recv(conn_.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

ssize_t ConnStream::read(char* ptr, size_t size) {
  if (size == 0) return 0;
  Conn& c = conn_;
  if (c.pending() > 0) {
    const size_t n = std::min(size, c.pending());
    std::memcpy(ptr, c.in.data() + c.pos, n);
    c.pos += n;
    if (in_body_) body_bytes_ += n;
    return static_cast<ssize_t>(n);
  }
  c.in.clear();
  c.pos = 0;
  if (!WaitReadable()) return -1;
  for (;;) {
    ssize_t n;
    if (size >= kDirectRead) {
      n = ::recv(c.fd, ptr, size, 0);
      if (n > 0 && in_body_) body_bytes_ += static_cast<size_t>(n);
    } else {
      // httplib reads lines a byte at a time: fill the buffer, hand out a piece.
      char buf[kReadChunk];
      n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        const size_t k = std::min(size, static_cast<size_t>(n));
        std::memcpy(ptr, buf, k);
        c.in.assign(buf + k, static_cast<size_t>(n) - k);
        if (in_body_) body_bytes_ += k;
        return static_cast<ssize_t>(k);
      }
    }
    if (n >= 0) return n;  // 0: the client closed
    if (errno == EINTR) continue;
    if ((errno == EAGAIN || errno == EWOULDBLOCK) && WaitReadable()) continue;
    return -1;
  }
}

ssize_t ConnStream::write(const char* ptr, size_t size) {
  wrote_ = true;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::send(conn_.fd, ptr + done, size - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{conn_.fd, POLLOUT, 0};
      int r;
      do {
        r = ::poll(&p, 1, static_cast<int>(limits_.io_timeout.count()));
      } while (r < 0 && errno == EINTR);
      if (r > 0) continue;  // writable, or an error the next send reports
    }
    return -1;  // a client that reads nothing for io_timeout, or a broken connection
  }
  return static_cast<ssize_t>(size);
}

namespace {

void AddressOf(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  const int r = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                     : getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (r != 0) return;
  if (addr.ss_family == AF_INET) {
    port = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    port = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  } else {
    return;
  }
  char host[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, nullptr, 0,
                  NI_NUMERICHOST) == 0) {
    ip = host;
  }
}

}  // namespace

void ConnStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  AddressOf(conn_.fd, true, ip, port);
}
void ConnStream::get_local_ip_and_port(std::string& ip, int& port) const {
  AddressOf(conn_.fd, false, ip, port);
}
socket_t ConnStream::socket() const { return conn_.fd; }

// ---------------------------------------------------------------------------

class ConnectionLoop::Pool {
 public:
  Pool(int n, ConnectionLoop* loop) : loop_(loop) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Run(); });
  }
  void Push(std::unique_ptr<Conn> c) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(c));
    }
    cv_.notify_one();
  }
  // Runs what is queued (the loop closes it when stopping), then joins.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Run() {
    for (;;) {
      std::unique_ptr<Conn> c;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        c = std::move(queue_.front());
        queue_.pop_front();
      }
      loop_->Work(std::move(c));
    }
  }

  ConnectionLoop* loop_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Conn>> queue_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

ConnectionLoop::ConnectionLoop(int listen_fd, ConnLimits limits, ServeFn serve, RejectFn on_reject)
    : listen_fd_(listen_fd),
      limits_(limits),
      serve_(std::move(serve)),
      on_reject_(std::move(on_reject)),
      max_connections_(MaxConnections(limits.max_connections)),
      out_of_memory_(OutOfMemoryResponse()) {}

ConnectionLoop::~ConnectionLoop() { Stop(); }

void ConnectionLoop::Start() {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  fcntl(listen_fd_, F_SETFL, fcntl(listen_fd_, F_GETFL, 0) | O_NONBLOCK);
  pool_ = std::make_unique<Pool>(std::max(1, limits_.workers), this);
  light_pool_ = std::make_unique<Pool>(std::max(1, limits_.light_workers), this);
  poller_ = std::thread([this] { PollLoop(); });
}

void ConnectionLoop::Wake() {
  const uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
}

void ConnectionLoop::StopAccepting() {
  accepting_ = false;
  Wake();
}

void ConnectionLoop::Stop() {
  std::call_once(stop_once_, [this] {
    accepting_ = false;
    stopping_ = true;
    {
      // A request that just ended (a drain cancelled it) may be writing its
      // answer: let it finish, so the client gets the whole answer, not a cut.
      std::unique_lock<std::mutex> lock(mu_);
      busy_cv_.wait_for(lock, limits_.stop_grace, [this] { return busy_fds_.empty(); });
      for (int fd : busy_fds_) ::shutdown(fd, SHUT_RDWR);  // blocked reads and writes return now
    }
    Wake();
    if (poller_.joinable()) poller_.join();
    if (pool_) pool_->Stop();
    if (light_pool_) light_pool_->Stop();
    if (wake_fd_ >= 0) ::close(wake_fd_);
    wake_fd_ = -1;
  });
}

// --- the poll thread ---------------------------------------------------------

void ConnectionLoop::PollLoop() {
  std::vector<pollfd> fds;
  while (!stopping_) {
    auto now = ConnClock::now();
    std::erase(polled_, nullptr);  // dispatched or closed in the last round
    TakeHandedBack(now);
    if (!accepting_ && !listener_shut_) {
      ::shutdown(listen_fd_, SHUT_RDWR);  // new connections are refused from here on
      listener_shut_ = true;
      for (auto& c : polled_) {
        ::close(c->fd);
        --open_;
      }
      polled_.clear();
    }
    auto next = now + std::chrono::seconds(1);
    for (auto& c : polled_) {
      if (c->deadline <= now) Expire(c);
      if (c) next = std::min(next, c->deadline);
    }
    std::erase(polled_, nullptr);

    const bool poll_listener = accepting_ && now >= accept_paused_until_;
    if (accepting_ && !poll_listener) next = std::min(next, accept_paused_until_);
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    if (poll_listener) fds.push_back({listen_fd_, POLLIN, 0});
    const size_t base = fds.size();
    for (auto& c : polled_) fds.push_back({c->fd, POLLIN, 0});
    const int r = ::poll(fds.data(), fds.size(), MillisUntil(next, now));
    if (r <= 0) continue;
    if (fds[0].revents) {
      uint64_t v;
      (void)!::read(wake_fd_, &v, sizeof v);
    }
    if (poll_listener && fds[1].revents) Accept();
    for (size_t i = 0; base + i < fds.size(); ++i) {  // Accept only appends: indices still match
      if (fds[base + i].revents && polled_[i]) OnReadable(polled_[i]);
    }
  }
  for (auto& c : polled_) {
    if (!c) continue;
    ::close(c->fd);
    --open_;
  }
  polled_.clear();
  std::vector<std::unique_ptr<Conn>> rest;
  {
    std::lock_guard<std::mutex> lock(mu_);
    poller_done_ = true;
    rest.swap(handed_back_);
  }
  for (auto& c : rest) {
    ::close(c->fd);
    --open_;
  }
}

namespace {

// The client's address as bytes (an IPv4-mapped IPv6 address as IPv4); empty
// for loopback and for what is not IP, which the per-client cap exempts.
std::string ClientKey(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a).sin_addr;
    const auto* b = reinterpret_cast<const unsigned char*>(&in.s_addr);
    if (b[0] == 127) return "";
    return std::string(reinterpret_cast<const char*>(b), 4);
  }
  if (a.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a).sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&in6)) return "";
    const auto* b = reinterpret_cast<const unsigned char*>(&in6);
    if (IN6_IS_ADDR_V4MAPPED(&in6))
      return b[12] == 127 ? "" : std::string(reinterpret_cast<const char*>(b + 12), 4);
    return std::string(reinterpret_cast<const char*>(b), 16);
  }
  return "";
}

}  // namespace

std::shared_ptr<std::atomic<int>> ConnectionLoop::ClientSlot(const std::string& key) {
  if (per_client_.size() > 2 * static_cast<size_t>(std::max(1, open_.load())) + 64) {
    for (auto it = per_client_.begin(); it != per_client_.end();) {
      it = it->second.expired() ? per_client_.erase(it) : std::next(it);
    }
  }
  std::weak_ptr<std::atomic<int>>& w = per_client_[key];
  std::shared_ptr<std::atomic<int>> count = w.lock();
  if (!count) {
    count = std::make_shared<std::atomic<int>>(0);
    w = count;
  }
  return count;
}

void ConnectionLoop::Accept() {
  const auto now = ConnClock::now();
  for (int i = 0; i < kAcceptsPerWake; ++i) {
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &peer_len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_paused_until_ = now + kAcceptPause;
      }
      return;  // EAGAIN: nothing more to accept
    }
    if (open_ >= max_connections_) {
      // Make room by dropping the connection that has waited longest without a
      // request; with none to drop, the newcomer is told and closed.
      auto idle = polled_.end();
      for (auto it = polled_.begin(); it != polled_.end(); ++it) {
        if (*it && (*it)->state != Conn::State::kHeaders &&
            (idle == polled_.end() || (*it)->deadline < (*idle)->deadline)) {
          idle = it;
        }
      }
      if (idle == polled_.end()) {
        SendOnce(fd, CannedResponse(503, limits_));
        ::close(fd);
        if (on_reject_) on_reject_(503);
        continue;
      }
      ::close((*idle)->fd);
      --open_;
      idle->reset();
    }
    std::shared_ptr<std::atomic<int>> client;
    if (limits_.max_connections_per_client > 0) {
      const std::string key = ClientKey(peer);
      if (!key.empty()) {
        client = ClientSlot(key);
        if (client->load() >= limits_.max_connections_per_client) {
          SendOnce(fd, CannedResponse(503, limits_, /*per_client=*/true));
          ::close(fd);
          if (on_reject_) on_reject_(503);
          continue;
        }
      }
    }
    int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    if (client) {
      ++*client;
      c->client_open = std::move(client);
    }
    c->deadline =
        now +
        limits_.header_timeout;  // a new connection gets the header time for its first request
    ++open_;
    polled_.push_back(std::move(c));
  }
}

void ConnectionLoop::OnReadable(std::unique_ptr<Conn>& c) {
  char buf[kReadChunk];
  if (c->state == Conn::State::kLinger) {
    for (int i = 0; i < kLingerReadsPerWake; ++i) {
      const ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);
      if (n > 0) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      ::close(c->fd);  // EOF or error: the client has the answer and is gone
      --open_;
      c.reset();
      return;
    }
    return;  // still sending: discarded until the linger deadline
  }
  const size_t room =
      limits_.max_header_bytes + 1 - std::min(c->pending(), limits_.max_header_bytes);
  const ssize_t n = ::recv(c->fd, buf, std::min(sizeof buf, room), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {  // closed between requests or mid-headers
    ::close(c->fd);
    --open_;
    c.reset();
    return;
  }
  const auto now = ConnClock::now();
  if (c->state == Conn::State::kIdle) {
    c->state = Conn::State::kHeaders;
    c->headers_since = now;
  }
  // The whole header block within header_timeout, and no silence longer than io_timeout.
  c->deadline = std::min(c->headers_since + limits_.header_timeout, now + limits_.io_timeout);
  c->in.append(buf, static_cast<size_t>(n));
  if (c->HeadersComplete()) {
    if (!HeaderLinesWellFormed(std::string_view(c->in).substr(c->pos))) return Reject(c, 400);
    Dispatch(std::move(c));
  } else if (c->pending() > limits_.max_header_bytes) {
    Reject(c, 431);
  }
}

void ConnectionLoop::Expire(std::unique_ptr<Conn>& c) {
  if (c->state == Conn::State::kHeaders) return Reject(c, 408);
  ::close(c->fd);  // idle keep-alive, a silent new connection, or lingering done
  --open_;
  c.reset();
}

void ConnectionLoop::Reject(std::unique_ptr<Conn>& c, int status) {
  SendOnce(c->fd, CannedResponse(status, limits_));
  if (on_reject_) on_reject_(status);
  ::shutdown(c->fd, SHUT_WR);
  c->state = Conn::State::kLinger;
  c->in.clear();
  c->pos = 0;
  c->deadline = ConnClock::now() + limits_.linger;
}

void ConnectionLoop::Dispatch(std::unique_ptr<Conn> c) {
  const bool light = c->Light(limits_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_fds_.insert(c->fd);
  }
  (light ? light_pool_ : pool_)->Push(std::move(c));
}

void ConnectionLoop::TakeHandedBack(ConnClock::time_point now) {
  std::vector<std::unique_ptr<Conn>> back;
  {
    std::lock_guard<std::mutex> lock(mu_);
    back.swap(handed_back_);
  }
  for (auto& c : back) {
    if (!accepting_) {
      ::close(c->fd);
      --open_;
    } else if (c->state != Conn::State::kLinger && c->HeadersComplete()) {
      Dispatch(std::move(c));  // a pipelined request was already read
    } else {
      if (c->state == Conn::State::kLinger) c->deadline = now + limits_.linger;
      polled_.push_back(std::move(c));
    }
  }
}

// --- the workers -------------------------------------------------------------

void ConnectionLoop::Work(std::unique_ptr<Conn> c) {
  if (stopping_) return CloseBusy(std::move(c));
  ConnRequestFlags& flags = t_flags;
  flags = ConnRequestFlags{};
  flags.fd = c->fd;
  ++c->served;
  const bool last = c->served >= limits_.max_requests_per_connection || !accepting_;
  bool closed = false;
  bool ok = false;
  ConnStream strm(*c, limits_);
  try {
    ok = serve_(strm, last, closed);
  } catch (const std::bad_alloc&) {
    ok = false;  // httplib catches the handlers' exceptions; this is its own
    if (!strm.wrote()) SendOnce(c->fd, out_of_memory_);
  } catch (...) {
    ok = false;
  }
  flags.fd = -1;
  c->Compact();
  if (!ok || !accepting_) return CloseBusy(std::move(c));
  if (flags.close_after) {
    // An error answer to a request whose body may be unread: stop writing, and
    // let the poll thread discard what the client still sends, so the close
    // does not turn into a reset that destroys the answer before it is read.
    ::shutdown(c->fd, SHUT_WR);
    c->state = Conn::State::kLinger;
    c->in.clear();
    c->pos = 0;
    return HandBack(std::move(c));
  }
  if (closed || last) return CloseBusy(std::move(c));
  const auto now = ConnClock::now();
  c->state = c->pending() > 0 ? Conn::State::kHeaders : Conn::State::kIdle;
  c->headers_since = now;
  c->deadline = now + (c->pending() > 0 ? std::min(limits_.header_timeout, limits_.io_timeout)
                                        : limits_.idle_timeout);
  HandBack(std::move(c));
}

void ConnectionLoop::HandBack(std::unique_ptr<Conn> c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_fds_.erase(c->fd);
    if (!poller_done_) {
      handed_back_.push_back(std::move(c));
    }
  }
  busy_cv_.notify_all();
  if (c) {
    ::close(c->fd);
    --open_;
    return;
  }
  Wake();
}

void ConnectionLoop::CloseBusy(std::unique_ptr<Conn> c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_fds_.erase(c->fd);
  }
  busy_cv_.notify_all();
  ::close(c->fd);
  --open_;
}

}  // namespace stet::server
