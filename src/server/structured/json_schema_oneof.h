// When `oneOf` can be enforced as a plain choice: a grammar can say "one of
// these branches" but not "exactly one", so stet accepts `oneOf` only when no
// JSON value can match two of its branches, which it must be able to prove
// from the schemas alone: distinct JSON types (integer counts as a number),
// distinct `const` / `enum` values, or objects with a required property whose
// `const` / `enum` values differ (a tagged union). Anything else is refused
// rather than enforced as `anyOf`, which would accept values `oneOf` forbids.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "http/api_error.h"

namespace stet::server {

// The first pair of branches of `branches` (a `oneOf` array) that stet cannot
// prove disjoint, as "i and j"; nullopt when every pair is provably disjoint.
// `doc` is the whole schema, for local "$ref"s.
std::optional<std::string> OverlappingBranches(const Json& branches, const Json& doc);

}  // namespace stet::server
