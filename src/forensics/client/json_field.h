// Reading a string field of a stored or received JSON record, which may lack
// the field or hold another type there (records are outside input).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace stet::forensics {

// j[key] when it is a string; "" when the key is absent or its value is null
// or of another type (find on a non-object finds nothing).
inline std::string Str(const nlohmann::ordered_json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace stet::forensics
