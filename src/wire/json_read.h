// Reading fields of JSON that arrived from outside (an endpoint's answer, a
// stored record), which may lack a field or hold another type there: each
// reader gives the field's value or its stated fallback, and never throws.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace stet::wire {

// The wire's JSON: objects keep the order their keys arrived in.
using Json = nlohmann::ordered_json;

// j[key] when it is a string; "" when the key is absent or its value is null
// or of another type (find on a non-object finds nothing).
inline std::string Str(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// j[key] when it is an integer; `fallback` otherwise.
inline int64_t IntOr(const Json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

// True only when j[key] is the boolean true (null, absent or another type read as false).
inline bool Flag(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

// `v` when it is a number.
inline std::optional<double> Num(const Json& v) {
  if (v.is_number()) return v.get<double>();
  return std::nullopt;
}

// j[key] when it is an array: its integers (-1 for an entry of another type).
inline std::optional<std::vector<int64_t>> Ids(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return std::nullopt;
  std::vector<int64_t> v;
  for (const auto& e : *it) v.push_back(e.is_number_integer() ? e.get<int64_t>() : -1);
  return v;
}

}  // namespace stet::wire
