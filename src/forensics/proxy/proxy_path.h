// The path `stet proxy` sends upstream, made from the client's request target:
// origin-form only (no scheme, no authority, no '@host' that would turn the
// configured base into userinfo), percent-escapes decoded before the check (so
// %2e%2e is a dot segment and %2f a separator), RFC 3986 dot segments removed,
// empty segments and a trailing '/' dropped. A '..' that would climb above the
// base is refused rather than clamped. The normalized route is what is
// recorded and what goes upstream, so no spelling of a path skips recording.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace stet::forensics {

struct ProxyTarget {
  std::string route;     // decoded and normalized: "/v1/chat/completions"
  std::string upstream;  // route re-encoded, plus "?query" when there is one
};

Result<ProxyTarget> NormalizeProxyTarget(std::string_view target);

}  // namespace stet::forensics
