// libFuzzer target for the path `stet proxy` sends upstream (NormalizeProxyTarget):
// the input is a request target as a client wrote it. A target it accepts must
// give a route and an upstream path that start with '/', hold no dot or empty
// segment, no byte a URL cannot carry as is, and normalize to themselves again
// (idempotent: a route relayed is the route recorded). Anything else is a
// crash here: the proxy must never build an upstream URL from hostile bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "forensics/proxy/proxy_path.h"

namespace {

void Require(bool ok) {
  if (!ok) std::abort();
}

bool HasDotOrEmptySegment(const std::string& p) {
  const auto ends_with = [&p](std::string_view s) {
    return p.size() >= s.size() && p.compare(p.size() - s.size(), s.size(), s) == 0;
  };
  return p.find("//") != std::string::npos || p.find("/./") != std::string::npos ||
         p.find("/../") != std::string::npos || ends_with("/.") || ends_with("/..");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using stet::forensics::NormalizeProxyTarget;
  const std::string_view target(reinterpret_cast<const char*>(data), size);
  auto t = NormalizeProxyTarget(target);
  if (!t.ok()) return 0;
  Require(!t->route.empty() && t->route[0] == '/');
  Require(!t->upstream.empty() && t->upstream[0] == '/');
  Require(!HasDotOrEmptySegment(t->route));
  const std::string path = t->upstream.substr(0, t->upstream.find('?'));
  Require(!HasDotOrEmptySegment(path));
  for (unsigned char c : t->upstream) {
    Require(c > 0x20 && c < 0x7f && c != '\\' && c != '#');
  }
  auto again = NormalizeProxyTarget(t->upstream);
  Require(again.ok());
  Require(again->route == t->route);
  Require(again->upstream == t->upstream);
  return 0;
}
