// The listening and serving steps `stet serve` and `stet proxy` share
// (http_server.h).
#include "http/http_server.h"

#include <csignal>

namespace stet::server {

Result<int> Listen(HttpServer& http, const std::string& host, int port) {
  if (port == 0) {
    const int bound = http.bind_to_any_port(host);
    if (bound < 0) return IoError("cannot listen on " + host + " (any port)");
    port = bound;
  } else if (!http.bind_to_port(host, port)) {
    return IoError("cannot listen on " + host + ":" + std::to_string(port) +
                   " (address in use, or not an address of this machine)");
  }
  http.RaiseBacklog(1024);
  std::signal(SIGPIPE, SIG_IGN);
  return port;
}

BodyRead ReadBody(const httplib::ContentReader& read, size_t max_bytes, std::string* body) {
  bool too_large = false;
  const bool ok = read([&](const char* data, size_t n) {
    if (n > max_bytes - body->size()) {
      too_large = true;
      return false;
    }
    body->append(data, n);
    return true;
  });
  if (ok) return BodyRead::kComplete;
  return too_large ? BodyRead::kTooLarge : BodyRead::kIncomplete;
}

std::unique_ptr<ConnectionLoop> StartServing(HttpServer& http, const ConnLimits& limits,
                                             RejectFn on_reject) {
  auto conns = std::make_unique<ConnectionLoop>(
      http.ListenSocket(), limits,
      [&http](ConnStream& strm, bool close_connection, bool& connection_closed) {
        return http.Serve(strm, close_connection, connection_closed,
                          [&strm](httplib::Request&) { strm.BeginBody(); });
      },
      std::move(on_reject));
  conns->Start();
  return conns;
}

}  // namespace stet::server
