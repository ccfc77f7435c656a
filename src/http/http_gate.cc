// Header checks made before a body is read (see http_gate.h). Each refusal is
// an OpenAI-shaped error naming the header and what the server accepts.
#include "http/http_gate.h"

#include <algorithm>
#include <cctype>

#include "base/hash.h"

namespace stet::server {

namespace {

constexpr const char* kLoopbackNames[] = {"localhost", "127.0.0.1", "[::1]"};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// What a header value looks like in a message: printable, at most 80 bytes.
std::string Shown(std::string_view v) {
  std::string out;
  for (char c : v.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (v.size() > 80) out += "...";
  return out;
}

ApiError Error(int status, std::string code, std::string message) {
  ApiError e;
  e.status = status;
  e.code = std::move(code);
  e.message = std::move(message);
  return e;
}

bool ValidName(std::string_view s) {
  if (s.empty()) return false;
  if (s.front() == '[') {
    if (s.size() < 3 || s.back() != ']') return false;
    return std::all_of(s.begin() + 1, s.end() - 1, [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
    });
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
  });
}

}  // namespace

std::string HostName(std::string_view h) {
  h = Trim(h);
  std::string_view name = h;
  std::string_view port;
  if (!h.empty() && h.front() == '[') {
    const size_t close = h.find(']');
    if (close == std::string_view::npos) return "";
    name = h.substr(0, close + 1);
    std::string_view rest = h.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':' || rest.size() == 1) return "";
      port = rest.substr(1);
    }
  } else if (const size_t colon = h.find(':'); colon != std::string_view::npos) {
    name = h.substr(0, colon);
    port = h.substr(colon + 1);
    if (port.empty()) return "";
  }
  if (!port.empty() && (!AllDigits(port) || port.size() > 5)) return "";
  if (name.size() > 1 && name.back() == '.') name.remove_suffix(1);  // "localhost." names localhost
  if (!ValidName(name)) return "";
  return Lower(name);
}

bool IsLoopbackHost(std::string_view host) {
  std::string h = Lower(Trim(host));
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return h == "localhost" || h == "::1" || h.rfind("127.", 0) == 0;
}

Result<HostPolicy> MakeHostPolicy(const std::string& bind_host,
                                  const std::vector<std::string>& allowed) {
  HostPolicy p;
  for (const char* n : kLoopbackNames) p.names.emplace_back(n);
  for (const std::string& a : allowed) {
    if (Trim(a) == "*") {
      p.any = true;
      continue;
    }
    std::string entry(Trim(a));
    if (entry.find(':') != std::string::npos && entry.front() != '[' &&
        entry.find(':') != entry.rfind(':')) {
      entry = "[" + entry + "]";  // a bare IPv6 address
    }
    const std::string name = HostName(entry);
    if (name.empty()) {
      return InvalidArgument("--allowed-hosts: '" + Shown(a) +
                             "' is not a host name or address (or '*')");
    }
    p.names.push_back(name);
  }
  if (allowed.empty()) {
    if (!IsLoopbackHost(bind_host)) {
      p.any =
          true;  // exposed on purpose: reached by names we cannot know (protect it with --api-key)
    } else {
      std::string b = bind_host;
      if (b.find(':') != std::string::npos && b.front() != '[') b = "[" + b + "]";
      if (std::string n = HostName(b); !n.empty()) p.names.push_back(n);
    }
  }
  return p;
}

std::optional<ApiError> CheckHost(const httplib::Request& req, const HostPolicy& policy) {
  const size_t count = req.get_header_value_count("Host");
  if (count > 1)
    return BadRequest("A request carries one Host header, not " + std::to_string(count) + ".");
  if (policy.any || count == 0) return std::nullopt;
  const std::string raw = req.get_header_value("Host");
  const std::string name = HostName(raw);
  if (!name.empty() &&
      std::find(policy.names.begin(), policy.names.end(), name) != policy.names.end()) {
    return std::nullopt;
  }
  return Error(
      403, "host_not_allowed",
      "Host '" + Shown(raw) +
          "' is not allowed: this server answers requests addressed to localhost, 127.0.0.1 or "
          "[::1] "
          "(or a name given with --allowed-hosts), which keeps web pages from reaching it by DNS "
          "rebinding.");
}

std::optional<ApiError> CheckFraming(const httplib::Request& req, size_t max_body_bytes) {
  const bool has_te = req.has_header("Transfer-Encoding");
  const bool has_cl = req.has_header("Content-Length");
  if (req.get_header_value_count("Transfer-Encoding") > 1 ||
      (has_te && Lower(Trim(req.get_header_value("Transfer-Encoding"))) != "chunked")) {
    return BadRequest("Transfer-Encoding '" + Shown(req.get_header_value("Transfer-Encoding")) +
                      "' is not supported: send a Content-Length or 'Transfer-Encoding: chunked'.");
  }
  if (has_te && has_cl)
    return BadRequest("A request carries Content-Length or Transfer-Encoding, not both.");
  if (req.has_header("Content-Encoding")) {
    const std::string enc = Lower(Trim(req.get_header_value("Content-Encoding")));
    if (enc != "identity" || req.get_header_value_count("Content-Encoding") > 1) {
      return Error(415, "unsupported_content_encoding",
                   "Content-Encoding '" + Shown(req.get_header_value("Content-Encoding")) +
                       "' is not supported: send the body uncompressed.");
    }
  }
  uint64_t length = 0;
  if (has_cl) {
    const std::string v(Trim(req.get_header_value("Content-Length")));
    if (req.get_header_value_count("Content-Length") > 1 || !AllDigits(v) || v.size() > 18) {
      return BadRequest("Content-Length '" + Shown(v) + "' is not one decimal length.");
    }
    length = std::stoull(v);
    if (length > max_body_bytes) {
      return Error(413, "request_too_large",
                   "The request body (" + v +
                       " bytes) is larger than this server accepts (--max-body-bytes " +
                       std::to_string(max_body_bytes) + ").");
    }
  }
  const bool body = has_te || length > 0;
  if ((req.method == "GET" || req.method == "HEAD") && body) {
    return BadRequest(req.method + " requests carry no body.");
  }
  if (req.method == "POST" && !has_te && !has_cl) {
    return Error(411, "length_required",
                 "A POST needs a Content-Length (or 'Transfer-Encoding: chunked').");
  }
  return std::nullopt;
}

std::optional<ApiError> CheckJsonContentType(const httplib::Request& req) {
  const std::string raw = req.get_header_value("Content-Type");
  const std::string_view v = raw;
  const size_t semi = v.find(';');
  const std::string type = Lower(Trim(v.substr(0, semi)));
  bool ok = type == "application/json" && req.get_header_value_count("Content-Type") == 1;
  if (ok && semi != std::string_view::npos) {
    // Parameters: only a UTF-8 charset (JSON is UTF-8, RFC 8259).
    std::string_view params = v.substr(semi + 1);
    while (ok && !params.empty()) {
      const size_t next = params.find(';');
      const std::string p = Lower(Trim(params.substr(0, next)));
      params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
      if (p.empty()) continue;
      if (p.rfind("charset=", 0) == 0) {
        std::string cs = p.substr(8);
        if (cs.size() >= 2 && cs.front() == '"' && cs.back() == '"')
          cs = cs.substr(1, cs.size() - 2);
        ok = cs == "utf-8" || cs == "utf8";
      }
    }
  }
  if (ok) return std::nullopt;
  return Error(415, "unsupported_media_type",
               "POST bodies are JSON sent with 'Content-Type: application/json' (this one: '" +
                   (raw.empty() ? std::string("none") : Shown(raw)) + "').");
}

bool HeaderLinesWellFormed(std::string_view block) {
  size_t eol = block.find('\n');
  if (eol == std::string_view::npos) return true;  // the request line alone: httplib judges it
  for (size_t at = eol + 1; at < block.size(); at = eol + 1) {
    eol = block.find('\n', at);
    if (eol == std::string_view::npos) eol = block.size();
    std::string_view line = block.substr(at, eol - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) return true;                        // the blank line: the headers end here
    if (line[0] == ' ' || line[0] == '\t') return false;  // obs-fold
    const size_t colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos) return false;
    for (char c : line.substr(0, colon)) {  // a field name is a token (RFC 9110 5.6.2)
      const bool tchar = std::isalnum(static_cast<unsigned char>(c)) ||
                         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
      if (!tchar) return false;
    }
  }
  return true;
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

std::optional<ApiError> CheckAuthorizationHeader(const httplib::Request& req) {
  if (req.get_header_value_count("Authorization") <= 1) return std::nullopt;
  return Error(400, "duplicate_authorization",
               "The request carries more than one Authorization header; send exactly one.");
}

std::string BearerKey(const httplib::Request& req) {
  const std::string h = req.get_header_value("Authorization");
  constexpr std::string_view kScheme = "bearer";
  if (h.size() <= kScheme.size() + 1) return "";
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(h[i])) != kScheme[i]) return "";
  }
  size_t at = kScheme.size();
  if (h[at] != ' ' && h[at] != '\t') return "";
  while (at < h.size() && (h[at] == ' ' || h[at] == '\t')) ++at;
  size_t end = h.size();
  while (end > at && (h[end - 1] == ' ' || h[end - 1] == '\t')) --end;
  return h.substr(at, end - at);
}

ApiKeyDigests::ApiKeyDigests(const std::vector<std::string>& keys) {
  for (const std::string& k : keys) digests_.push_back(Sha256Hex(k.data(), k.size()));
}

int ApiKeyDigests::Find(std::string_view presented) const {
  const std::string d = Sha256Hex(presented.data(), presented.size());
  int found = -1;
  for (size_t i = 0; i < digests_.size(); ++i) {  // every digest compared: no early exit
    if (ConstantTimeEquals(d, digests_[i]) && found < 0) found = static_cast<int>(i);
  }
  return found;
}

}  // namespace stet::server
