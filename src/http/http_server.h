// cpp-httplib's server with the hooks stet's own connection loop needs: serve
// one request on a stream the loop owns, read the listening socket, close it
// after the last answer, and raise the accept backlog. Shared by `stet serve`
// and `stet proxy`, so both keep httplib's parser and routing under the same
// deadlines (http_conn.h).
#pragma once

#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <string>

#include "base/status.h"
#include "http/http_conn.h"

namespace stet::server {

class HttpServer : public httplib::Server {
 public:
  // One request on a connection the ConnectionLoop owns: httplib parses,
  // routes and answers it (process_request); `setup` runs once the headers are
  // parsed, before the body is read.
  bool Serve(httplib::Stream& strm, bool close_connection, bool& connection_closed,
             const std::function<void(httplib::Request&)>& setup) {
    return process_request(strm, close_connection, connection_closed, setup);
  }
  socket_t ListenSocket() const { return svr_sock_; }
  // Only after the last response is written: httplib's chunked writer stops
  // streaming once svr_sock_ is INVALID_SOCKET.
  void CloseListenSocket() {
    const socket_t s = svr_sock_.exchange(INVALID_SOCKET);
    if (s != INVALID_SOCKET) ::close(s);
  }
  // httplib listens with a backlog of 5, so a burst of clients overflows the
  // accept queue and some get reset; listen() again only raises the backlog.
  void RaiseBacklog(int n) {
    const socket_t s = svr_sock_;
    if (s != INVALID_SOCKET) ::listen(s, n);
  }
  // A handler's exception answered as both servers do, the process going on: out of
  // memory frees the response's body (the likeliest thing holding memory) and calls
  // `out_of_memory`; any other calls `internal` with its what() ("unknown exception").
  void OnHandlerException(std::function<void(httplib::Response&)> out_of_memory,
                          std::function<void(httplib::Response&, const std::string&)> internal) {
    set_exception_handler([out_of_memory, internal](const httplib::Request&, httplib::Response& res,
                                                    std::exception_ptr ep) {
      std::string what = "unknown exception";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::bad_alloc&) {
        res.body.clear();
        res.body.shrink_to_fit();
        out_of_memory(res);
        return;
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      internal(res, what);
    });
  }
  // The settings both servers give httplib. Connections, deadlines and worker
  // threads are the ConnectionLoop's; the keep-alive values only shape the
  // Keep-Alive header httplib writes. SO_REUSEADDR only: httplib's default adds
  // SO_REUSEPORT, which would let a second server bind the same port and
  // silently share its traffic.
  void Configure(int keep_alive_s, int max_requests_per_connection, size_t max_body_bytes) {
    set_keep_alive_timeout(keep_alive_s);
    set_keep_alive_max_count(max_requests_per_connection);
    set_payload_max_length(max_body_bytes);
    set_tcp_nodelay(true);
    set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
  }
};

// Binds http to host:port (port 0: any free port) with an accept backlog for
// bursts, and ignores SIGPIPE (a client that hangs up mid-answer must not kill
// the process). Returns the port it listens on.
Result<int> Listen(HttpServer& http, const std::string& host, int port);

// How a request body's read ended.
enum class BodyRead { kComplete, kTooLarge, kIncomplete };

// Reads a request body into *body, at most max_bytes, counted as decoded bytes
// arrive (Content-Length or chunked): the read stops at the first byte over.
// kIncomplete: the client stopped early, broke the framing, or ran past a
// deadline (CurrentConnRequest().deadline_hit says which).
BodyRead ReadBody(const httplib::ContentReader& read, size_t max_bytes, std::string* body);

// A started ConnectionLoop on http's listening socket whose workers hand each
// request to http (httplib parses, routes and answers it; the body deadline
// starts once the headers are in).
std::unique_ptr<ConnectionLoop> StartServing(HttpServer& http, const ConnLimits& limits,
                                             RejectFn on_reject);

}  // namespace stet::server
