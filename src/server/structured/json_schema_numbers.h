// Bounded numbers as grammars: integer and decimal ranges written as digit
// grammars, so `minimum`/`maximum`/`exclusiveMinimum`/`exclusiveMaximum` are
// enforced while the number is generated. Invariant: every string a returned
// expression matches is a JSON number whose value (as a double, the way
// validators parse it) lies within the bounds; nothing outside them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/status.h"
#include "http/api_error.h"

namespace stet::server {

// Most digits of an integer part (as the unbounded integer rule allows).
constexpr int kMaxIntDigits = 16;
// Most fraction digits of an unbounded number.
constexpr int kMaxFracDigits = 16;

// The bounds of a numeric schema, read from minimum / maximum /
// exclusiveMinimum / exclusiveMaximum (numbers, as drafts 6+ write them, or
// draft 4's booleans beside minimum/maximum).
struct NumberBounds {
  std::optional<Json> lo, hi;  // the bound numbers as written (integers stay exact)
  bool lo_exclusive = false, hi_exclusive = false;
  bool any() const { return lo || hi; }
};
Result<NumberBounds> ReadNumberBounds(const Json& schema);

// GBNF expression for the integers within `b` (no leading zeros; "-0" never).
// InvalidArgument when none is, or a bound lies beyond kMaxIntDigits digits.
Result<std::string> IntegerRangeGbnf(const NumberBounds& b);
// GBNF expression for the decimal numbers (no exponent) within `b`.
Result<std::string> NumberRangeGbnf(const NumberBounds& b);

}  // namespace stet::server
