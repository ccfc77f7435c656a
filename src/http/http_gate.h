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
#include "http/api_error.h"

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

// The header lines of a request (from its request line up to the blank line
// that ends them) are each "name: value": no whitespace before the colon, no
// line folded onto the previous one (a space or tab first), no line without a
// colon (RFC 9112 sections 5.1 and 5.2) - a proxy in front would read them
// differently (request smuggling).
bool HeaderLinesWellFormed(std::string_view block);

// a == b in time that depends only on the lengths (API keys: no timing hint
// of how much of a guess was right).
bool ConstantTimeEquals(const std::string& a, const std::string& b);

// 400 duplicate_authorization for a request with more than one Authorization
// header (which one counts would depend on who reads it).
std::optional<ApiError> CheckAuthorizationHeader(const httplib::Request& req);
// The key of "Authorization: Bearer <key>", the scheme in any case (RFC 9110
// 11.1); empty when there is none or another scheme.
std::string BearerKey(const httplib::Request& req);

// API keys as SHA-256 digests: a presented key is hashed and compared with
// every configured digest in constant time, so neither a key's length nor how
// much of a guess was right shows in the time taken.
class ApiKeyDigests {
 public:
  ApiKeyDigests() = default;
  explicit ApiKeyDigests(const std::vector<std::string>& keys);
  bool empty() const { return digests_.empty(); }
  // The index of the key `presented` is, or -1.
  int Find(std::string_view presented) const;

 private:
  std::vector<std::string> digests_;
};

}  // namespace stet::server
