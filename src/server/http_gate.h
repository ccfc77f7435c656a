// Checks on a request's headers, made before any of its body is read: which
// Host names may address the server (DNS rebinding), that a POST declares JSON
// (a web page cannot send that as a CORS "simple request", so cannot drive a
// local server), and that the body is framed so the server can bound it (one
// Content-Length or chunked, no Content-Encoding). Pure functions: no I/O.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/api_error.h"

namespace stet::server {

struct HostPolicy {
  bool any = false;                // every Host is accepted
  std::vector<std::string> names;  // accepted names: lower case, no port, IPv6 in brackets
};

// `--allowed-hosts` (entries, or "*") over the bind address: the loopback names
// (localhost, 127.0.0.1, [::1]) are always accepted; a server bound to a
// non-loopback address (0.0.0.0, a LAN address) accepts every Host unless
// `allowed` names some. Bad entries are an error.
Result<HostPolicy> MakeHostPolicy(const std::string& bind_host,
                                  const std::vector<std::string>& allowed);
bool IsLoopbackHost(std::string_view host);
// The name part of a Host header ("Example.com:80" -> "example.com", "[::1]:8080"
// -> "[::1]"); empty when it is not a valid host[:port].
std::string HostName(std::string_view host_header);

// 403 host_not_allowed, or 400 for several Host headers. A request without Host
// passes: it cannot come from a browser.
std::optional<ApiError> CheckHost(const httplib::Request& req, const HostPolicy& policy);
// 400 (conflicting or malformed framing, a body on GET), 411 (a POST without a
// length), 413 (Content-Length over `max_body_bytes`), 415 (Content-Encoding).
std::optional<ApiError> CheckFraming(const httplib::Request& req, size_t max_body_bytes);
// 415 unless Content-Type is application/json (charset utf-8 if one is given).
std::optional<ApiError> CheckJsonContentType(const httplib::Request& req);

// a == b in time that depends only on the lengths (API keys: no timing hint
// of how much of a guess was right).
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace stet::server
