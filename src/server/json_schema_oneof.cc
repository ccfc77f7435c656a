// A conservative disjointness proof for `oneOf` branches: each branch is
// summarized by what it can match (a finite set of values, a set of JSON
// types, or anything) plus, for objects, its required properties pinned to
// finite values; "disjoint" is claimed only from these summaries.
#include "server/json_schema_oneof.h"

#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace stet::server {

namespace {

constexpr int kMaxDepth = 16;

struct Summary {
  bool anything = false;
  bool finite = false;
  std::vector<Json> values;                       // finite: the only values it matches
  std::set<std::string> types;                    // not finite: the JSON types it may match
  std::map<std::string, std::vector<Json>> tags;  // objects: required property -> its values
};

Summary Anything() {
  Summary s;
  s.anything = true;
  return s;
}

std::string TypeOf(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d ? "integer" : "number";
}

bool TypeIn(const std::string& t, const std::set<std::string>& types) {
  return types.count(t) > 0 || (t == "integer" && types.count("number") > 0);
}

bool TypesOverlap(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const std::string& t : a) {
    if (TypeIn(t, b) || (t == "number" && b.count("integer"))) return true;
  }
  return false;
}

const Json* Resolve(const Json& doc, const std::string& ref) {
  if (ref.empty() || ref[0] != '#') return nullptr;
  const Json* node = &doc;
  size_t pos = 1;
  while (pos < ref.size()) {
    if (ref[pos] != '/') return nullptr;
    const size_t next = ref.find('/', pos + 1);
    std::string token = ref.substr(pos + 1, next == std::string::npos ? next : next - pos - 1);
    for (size_t i; (i = token.find("~1")) != std::string::npos;) token.replace(i, 2, "/");
    for (size_t i; (i = token.find("~0")) != std::string::npos;) token.replace(i, 2, "~");
    if (!node->is_object() || !node->contains(token)) return nullptr;
    node = &(*node)[token];
    pos = next == std::string::npos ? ref.size() : next;
  }
  return node;
}

// The values a property schema pins (const or enum); empty when it does not.
std::vector<Json> Pinned(const Json& s) {
  if (!s.is_object()) return {};
  if (s.contains("const")) return {s["const"]};
  if (s.contains("enum") && s["enum"].is_array()) return s["enum"].get<std::vector<Json>>();
  return {};
}

Summary Summarize(const Json& s, const Json& doc, int depth);

Summary Union(const Json& list, const Json& doc, int depth) {
  Summary u;
  u.finite = true;
  for (const Json& b : list) {
    Summary one = Summarize(b, doc, depth + 1);
    if (one.anything) return Anything();
    if (one.finite) {
      u.values.insert(u.values.end(), one.values.begin(), one.values.end());
      for (const Json& v : one.values) u.types.insert(TypeOf(v));
    } else {
      u.finite = false;
      u.types.insert(one.types.begin(), one.types.end());
    }
  }
  if (!u.finite) u.values.clear();
  return u;
}

std::set<std::string> ImpliedTypes(const Json& s) {
  if (s.contains("type")) {
    const Json& t = s["type"];
    if (t.is_string()) return {t.get<std::string>()};
    std::set<std::string> out;
    if (t.is_array()) {
      for (const Json& one : t) {
        if (one.is_string()) out.insert(one.get<std::string>());
      }
    }
    return out;
  }
  if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties"))
    return {"object"};
  if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) return {"array"};
  if (s.contains("minLength") || s.contains("maxLength")) return {"string"};
  return {};
}

Summary Summarize(const Json& s, const Json& doc, int depth) {
  if (depth > kMaxDepth || !s.is_object()) return Anything();
  if (s.contains("$ref")) {
    const Json* target =
        s["$ref"].is_string() ? Resolve(doc, s["$ref"].get<std::string>()) : nullptr;
    return target ? Summarize(*target, doc, depth + 1) : Anything();
  }
  Summary out;
  if (s.contains("const") || (s.contains("enum") && s["enum"].is_array())) {
    out.finite = true;
    out.values = Pinned(s);
    return out;
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (s.contains(key) && s[key].is_array()) return Union(s[key], doc, depth);
  }
  if (s.contains("allOf") && s["allOf"].is_array() && s["allOf"].size() == 1)
    return Summarize(s["allOf"][0], doc, depth + 1);
  out.types = ImpliedTypes(s);
  if (out.types.empty()) return Anything();
  if (out.types == std::set<std::string>{"object"} && s.contains("required") &&
      s["required"].is_array() && s.contains("properties") && s["properties"].is_object()) {
    for (const Json& name : s["required"]) {
      if (!name.is_string() || !s["properties"].contains(name.get<std::string>())) continue;
      std::vector<Json> vals = Pinned(s["properties"][name.get<std::string>()]);
      if (!vals.empty()) out.tags[name.get<std::string>()] = std::move(vals);
    }
  }
  return out;
}

bool ValuesDisjoint(const std::vector<Json>& a, const std::vector<Json>& b) {
  for (const Json& x : a) {
    for (const Json& y : b) {
      if (x == y) return false;
    }
  }
  return true;
}

bool Disjoint(const Summary& a, const Summary& b) {
  if (a.anything || b.anything) return false;
  if (a.finite && b.finite) return ValuesDisjoint(a.values, b.values);
  if (a.finite || b.finite) {
    const Summary& f = a.finite ? a : b;
    const Summary& t = a.finite ? b : a;
    for (const Json& v : f.values) {
      if (TypeIn(TypeOf(v), t.types)) return false;
    }
    return true;
  }
  if (!TypesOverlap(a.types, b.types)) return true;
  for (const auto& [name, vals] : a.tags) {  // a tagged union: the same required key, other values
    auto it = b.tags.find(name);
    if (it != b.tags.end() && ValuesDisjoint(vals, it->second)) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> OverlappingBranches(const Json& branches, const Json& doc) {
  std::vector<Summary> s;
  for (const Json& b : branches) s.push_back(Summarize(b, doc, 0));
  for (size_t i = 0; i < s.size(); ++i) {
    for (size_t j = i + 1; j < s.size(); ++j) {
      if (!Disjoint(s[i], s[j])) return std::to_string(i) + " and " + std::to_string(j);
    }
  }
  return std::nullopt;
}

}  // namespace stet::server
