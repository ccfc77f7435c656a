#include "forensics/proxy/proxy_path.h"

#include <vector>

namespace stet::forensics {

namespace {

constexpr size_t kMaxTargetBytes = 8192;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool Unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

bool SubDelim(unsigned char c) {
  return c == '!' || c == '$' || c == '&' || c == '\'' || c == '(' || c == ')' || c == '*' ||
         c == '+' || c == ',' || c == ';' || c == '=';
}

// A path segment's byte that may go upstream as it is (RFC 3986 pchar).
bool PlainPchar(unsigned char c) { return Unreserved(c) || SubDelim(c) || c == ':' || c == '@'; }

Status Refuse(const std::string& why) {
  return InvalidArgument("The request path " + why + "; stet proxy relays only paths under " +
                         "its configured upstream.");
}

// Decodes every %XX of a path; control bytes, NUL and '\' are refused.
Result<std::string> DecodePath(std::string_view p) {
  std::string out;
  out.reserve(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(p[i]);
    if (c == '%') {
      if (i + 2 >= p.size()) return Refuse("has a malformed percent-escape");
      const int hi = HexValue(p[i + 1]), lo = HexValue(p[i + 2]);
      if (hi < 0 || lo < 0) return Refuse("has a malformed percent-escape");
      c = static_cast<unsigned char>(hi * 16 + lo);
      i += 2;
    }
    if (c < 0x20 || c == 0x7f || c == '\\') return Refuse("holds a control byte or a backslash");
    out.push_back(static_cast<char>(c));
  }
  return out;
}

}  // namespace

Result<ProxyTarget> NormalizeProxyTarget(std::string_view target) {
  if (target.size() > kMaxTargetBytes) return Refuse("is longer than 8192 bytes");
  if (target.empty() || target[0] != '/') {
    return Refuse("must start with '/' (no scheme, host or '@' may come from the request)");
  }
  if (target.find('#') != std::string_view::npos) return Refuse("must not hold a fragment");
  const size_t q = target.find('?');
  STET_ASSIGN_OR_RETURN(std::string decoded, DecodePath(target.substr(0, q)));
  std::vector<std::string_view> segments;
  std::string_view rest = decoded;
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    const std::string_view seg = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (seg.empty() || seg == ".") continue;
    if (seg == "..") {
      if (segments.empty()) return Refuse("climbs above the upstream's base with '..'");
      segments.pop_back();
      continue;
    }
    segments.push_back(seg);
  }
  ProxyTarget t;
  for (std::string_view seg : segments) t.route += "/" + std::string(seg);
  if (t.route.empty()) t.route = "/";
  static const char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : t.route) {
    if (c == '/' || PlainPchar(c)) {
      t.upstream.push_back(static_cast<char>(c));
    } else {
      t.upstream += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  if (q != std::string_view::npos) {
    const std::string_view query = target.substr(q + 1);
    for (unsigned char c : query) {
      if (!(PlainPchar(c) || c == '/' || c == '?' || c == '%')) {
        return Refuse("has a query byte that must be percent-encoded");
      }
    }
    if (!query.empty()) t.upstream += "?" + std::string(query);
  }
  return t;
}

}  // namespace stet::forensics
