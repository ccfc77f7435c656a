// A conservative disjointness proof for `oneOf` branches: each branch is
// summarized by what it can match (a finite set of values, a set of JSON
// types, or anything) plus, for objects, its required properties pinned to
// finite values; "disjoint" is claimed only from these summaries.
//
// Bounded work whatever the schema (issue 25: a 1.5 MB schema took 14-19 s
// here): values are compared by canonical keys in hash maps (linear, not
// |enum_a| x |enum_b|), summaries are made under a step budget (a $ref fan-out
// cannot grow exponentially), and only the branches that are not const/enum
// are compared pairwise, at most kMaxTypedBranches of them, with at most
// kMaxTags small tags each.
#include "server/structured/json_schema_oneof.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <vector>

namespace stet::server {

namespace {

constexpr int kMaxDepth = 16;
constexpr size_t kBudget = 2'000'000;  // summary steps and values visited, per oneOf
constexpr size_t kMaxTypedBranches = 256;
constexpr size_t kMaxTags = 8;        // tags kept per object branch (more only prove less)
constexpr size_t kMaxTagValues = 64;  // a tag with more values is not kept

// JSON types as bits; "integer" is a value type, and a "number" schema takes integers.
enum : uint8_t {
  kNull = 1,
  kBool = 2,
  kString = 4,
  kArray = 8,
  kObject = 16,
  kInt = 32,
  kNum = 64
};

uint8_t TypeBit(const std::string& t) {
  if (t == "null") return kNull;
  if (t == "boolean") return kBool;
  if (t == "string") return kString;
  if (t == "array") return kArray;
  if (t == "object") return kObject;
  if (t == "integer") return kInt;
  if (t == "number") return kNum;
  return 0;
}

uint8_t TypeOf(const Json& v) {
  if (v.is_null()) return kNull;
  if (v.is_boolean()) return kBool;
  if (v.is_string()) return kString;
  if (v.is_array()) return kArray;
  if (v.is_object()) return kObject;
  if (v.is_number_integer() || v.is_number_unsigned()) return kInt;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d ? kInt : kNum;
}

// A value of type bits `values` may match a schema of type bits `schema`.
bool ValueTypesMatch(uint8_t values, uint8_t schema) {
  return (values & schema) != 0 || ((values & kInt) && (schema & kNum));
}

bool SchemaTypesOverlap(uint8_t a, uint8_t b) {
  return (a & b) != 0 || ((a & kInt) && (b & kNum)) || ((a & kNum) && (b & kInt));
}

struct Ctx {
  const Json& doc;
  size_t budget = kBudget;
  bool exhausted = false;
  bool Spend(size_t n) {
    if (n > budget) {
      budget = 0;
      exhausted = true;
      return false;
    }
    budget -= n;
    return true;
  }
};

// Equal keys for values JSON Schema calls equal (1 and 1.0 alike; -0 and 0).
void AppendKey(const Json& v, std::string* out) {
  switch (TypeOf(v)) {
    case kInt:
      if (v.is_number_unsigned()) {
        *out += "i" + std::to_string(v.get<uint64_t>());
      } else if (v.is_number_integer()) {
        *out += "i" + std::to_string(v.get<int64_t>());
      } else {
        const double d = v.get<double>();
        if (std::fabs(d) < 9.2e18) {
          *out += "i" + std::to_string(static_cast<int64_t>(d));
        } else {
          char buf[40];
          std::snprintf(buf, sizeof buf, "f%.17g", d);
          *out += buf;
        }
      }
      return;
    case kNum: {
      char buf[40];
      std::snprintf(buf, sizeof buf, "f%.17g", v.get<double>());
      *out += buf;
      return;
    }
    case kArray:
      *out += '[';
      for (const Json& x : v) {
        AppendKey(x, out);
        *out += ',';
      }
      *out += ']';
      return;
    case kObject:
      *out += '{';
      for (const auto& kv : v.items()) {
        *out += Json(kv.key()).dump() + ':';
        AppendKey(kv.value(), out);
        *out += ',';
      }
      *out += '}';
      return;
    default:
      *out += v.dump();  // null, booleans, strings (quoted and escaped: unambiguous)
  }
}

std::string KeyOf(const Json& v) {
  std::string k;
  AppendKey(v, &k);
  return k;
}

struct Summary {
  bool anything = false;
  bool finite = false;
  std::vector<std::string> keys;  // finite: the only values it matches, as keys
  uint8_t types = 0;              // finite: its values' types; else the types it may match
  std::map<std::string, std::vector<std::string>> tags;  // required property -> sorted keys
};

Summary Anything() {
  Summary s;
  s.anything = true;
  return s;
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

// The values a schema pins (const or enum), or nullptr when it pins none.
const Json* PinnedList(const Json& s, Json* one) {
  if (!s.is_object()) return nullptr;
  if (s.contains("const")) {
    *one = Json::array({s["const"]});
    return one;
  }
  if (s.contains("enum") && s["enum"].is_array()) return &s["enum"];
  return nullptr;
}

bool AddPinned(const Json& list, Ctx& ctx, Summary* out) {
  if (!ctx.Spend(list.size() + 1)) return false;
  for (const Json& v : list) {
    out->keys.push_back(KeyOf(v));
    out->types |= TypeOf(v);
  }
  return true;
}

uint8_t ImpliedTypes(const Json& s) {
  if (s.contains("type")) {
    const Json& t = s["type"];
    if (t.is_string()) return TypeBit(t.get<std::string>());
    uint8_t out = 0;
    if (t.is_array()) {
      for (const Json& one : t) {
        if (one.is_string()) out |= TypeBit(one.get<std::string>());
      }
    }
    return out;
  }
  if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties"))
    return kObject;
  if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) return kArray;
  if (s.contains("minLength") || s.contains("maxLength")) return kString;
  return 0;
}

Summary Summarize(const Json& s, Ctx& ctx, int depth);

Summary Union(const Json& list, Ctx& ctx, int depth) {
  Summary u;
  u.finite = true;
  for (const Json& b : list) {
    Summary one = Summarize(b, ctx, depth + 1);
    if (one.anything) return Anything();
    if (one.finite && u.finite) {
      if (!ctx.Spend(one.keys.size())) return Anything();
      u.keys.insert(u.keys.end(), std::make_move_iterator(one.keys.begin()),
                    std::make_move_iterator(one.keys.end()));
      u.types |= one.types;
    } else if (one.finite) {
      u.types |= one.types;  // a finite part of a typed union: its values' types
    } else {
      if (u.finite) u.keys.clear();
      u.finite = false;
      u.types |= one.types;
    }
  }
  return u;
}

void AddTags(const Json& s, Ctx& ctx, Summary* out) {
  const Json& props = s["properties"];
  for (const Json& name : s["required"]) {
    if (out->tags.size() >= kMaxTags || !ctx.Spend(1)) return;
    if (!name.is_string() || !props.contains(name.get<std::string>())) continue;
    Json one;
    const Json* vals = PinnedList(props[name.get<std::string>()], &one);
    if (vals == nullptr || vals->empty() || vals->size() > kMaxTagValues) continue;
    if (!ctx.Spend(vals->size())) return;
    std::vector<std::string> keys;
    for (const Json& v : *vals) keys.push_back(KeyOf(v));
    std::sort(keys.begin(), keys.end());
    out->tags[name.get<std::string>()] = std::move(keys);
  }
}

Summary Summarize(const Json& s, Ctx& ctx, int depth) {
  if (depth > kMaxDepth || !s.is_object() || !ctx.Spend(1)) return Anything();
  if (s.contains("$ref")) {
    const Json* target =
        s["$ref"].is_string() ? Resolve(ctx.doc, s["$ref"].get<std::string>()) : nullptr;
    return target ? Summarize(*target, ctx, depth + 1) : Anything();
  }
  Summary out;
  Json one;
  if (const Json* pinned = PinnedList(s, &one)) {
    out.finite = true;
    return AddPinned(*pinned, ctx, &out) ? out : Anything();
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (s.contains(key) && s[key].is_array()) return Union(s[key], ctx, depth);
  }
  if (s.contains("allOf") && s["allOf"].is_array() && s["allOf"].size() == 1)
    return Summarize(s["allOf"][0], ctx, depth + 1);
  out.types = ImpliedTypes(s);
  if (out.types == 0) return Anything();
  if (out.types == kObject && s.contains("required") && s["required"].is_array() &&
      s.contains("properties") && s["properties"].is_object()) {
    AddTags(s, ctx, &out);
  }
  return out;
}

bool SortedDisjoint(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) return false;
    a[i] < b[j] ? ++i : ++j;
  }
  return true;
}

// Two branches that are neither "anything" nor finite.
bool TypedDisjoint(const Summary& a, const Summary& b) {
  if (!SchemaTypesOverlap(a.types, b.types)) return true;
  for (const auto& [name, vals] : a.tags) {  // a tagged union: the same required key, other values
    auto it = b.tags.find(name);
    if (it != b.tags.end() && SortedDisjoint(vals, it->second)) return true;
  }
  return false;
}

std::string Pair(size_t i, size_t j) {
  return std::to_string(std::min(i, j)) + " and " + std::to_string(std::max(i, j));
}

}  // namespace

std::optional<std::string> OverlappingBranches(const Json& branches, const Json& doc) {
  Ctx ctx{doc};
  std::vector<Summary> s;
  s.reserve(branches.size());
  for (const Json& b : branches) s.push_back(Summarize(b, ctx, 0));
  if (ctx.exhausted) {
    return "(" + std::to_string(branches.size()) + " of them) took over " +
           std::to_string(kBudget) + " steps to compare, so they cannot be proven disjoint and";
  }
  const size_t n = s.size();
  if (n < 2) return std::nullopt;  // one branch: oneOf is that branch
  for (size_t i = 0; i < n; ++i) {
    if (s[i].anything) return Pair(i, i == 0 ? 1 : 0);
  }
  // Finite against finite: a value two branches share.
  std::unordered_map<std::string, size_t> owner;
  size_t total = 0;
  for (const Summary& one : s) total += one.finite ? one.keys.size() : 0;
  owner.reserve(total);
  for (size_t i = 0; i < n; ++i) {
    if (!s[i].finite) continue;
    for (const std::string& k : s[i].keys) {
      auto [it, fresh] = owner.try_emplace(k, i);
      if (!fresh && it->second != i) return Pair(it->second, i);
    }
  }
  // Finite against typed: by the values' type bits (128 possible sets).
  std::vector<size_t> first_with(128, SIZE_MAX), typed;
  for (size_t i = 0; i < n; ++i) {
    if (s[i].finite) {
      if (first_with[s[i].types] == SIZE_MAX) first_with[s[i].types] = i;
    } else {
      typed.push_back(i);
    }
  }
  for (size_t t : typed) {
    for (size_t m = 1; m < 128; ++m) {
      if (first_with[m] != SIZE_MAX && ValueTypesMatch(static_cast<uint8_t>(m), s[t].types))
        return Pair(first_with[m], t);
    }
  }
  // Typed against typed: pairwise, over a bounded number.
  if (typed.size() > kMaxTypedBranches) {
    return "(" + std::to_string(typed.size()) + " that are not const/enum, over " +
           std::to_string(kMaxTypedBranches) + ") are too many to compare and";
  }
  for (size_t a = 0; a < typed.size(); ++a) {
    for (size_t b = a + 1; b < typed.size(); ++b) {
      if (!TypedDisjoint(s[typed[a]], s[typed[b]])) return Pair(typed[a], typed[b]);
    }
  }
  return std::nullopt;
}

}  // namespace stet::server
