// The JSON Schema converter: one GBNF rule per schema node, shared rules for
// the JSON primitives. Numbers and integers are bounded in digits and
// whitespace runs in length (kMaxJsonBlanks), so the only unbounded parts of
// an output are the ones the schema leaves unbounded (strings, arrays).
#include "server/structured/json_schema.h"

#include <optional>
#include <set>

#include "server/structured/json_schema_formats.h"
#include "server/structured/json_schema_numbers.h"
#include "server/structured/json_schema_oneof.h"
#include "server/structured/json_schema_pattern.h"

namespace stet::server {
namespace {

constexpr int kMaxSchemaDepth = 64;

const std::set<std::string>& Ignored() {
  // discriminator: OpenAPI's hint beside oneOf/anyOf (the branches enforce it);
  // contentEncoding/contentMediaType: annotations in JSON Schema 2020-12.
  static const std::set<std::string> s = {
      "title", "description", "default",       "examples",        "$schema",
      "$id",   "$comment",    "deprecated",    "readOnly",        "writeOnly",
      "$defs", "definitions", "discriminator", "contentEncoding", "contentMediaType"};
  return s;
}
const std::set<std::string>& Handled() {
  static const std::set<std::string> s = {"type",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "items",
                                          "minItems",
                                          "maxItems",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref",
                                          "minLength",
                                          "maxLength",
                                          "format",
                                          "pattern",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "prefixItems",
                                          "uniqueItems",
                                          "multipleOf",
                                          "propertyNames",
                                          "minProperties",
                                          "maxProperties"};
  return s;
}

Status Refuse(const std::string& what) { return InvalidArgument(what); }

Result<int> ReadCount(const Json& s, const char* key, int fallback) {
  auto it = s.find(key);
  if (it == s.end()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1 << 20) {
    return Refuse(std::string("'") + key + "' must be a non-negative integer");
  }
  return static_cast<int>(it->get<int64_t>());
}

// x repeated between lo and hi times (hi < 0: unbounded), as GBNF.
std::string Repeat(const std::string& x, int lo, int hi) {
  if (hi < 0) return "(" + x + "){" + std::to_string(lo) + ",}";
  return "(" + x + "){" + std::to_string(lo) + "," + std::to_string(hi) + "}";
}

// JSON Pointer token unescaping (~1 -> /, ~0 -> ~).
std::string Unescape(const std::string& t) {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '~' && i + 1 < t.size() && (t[i + 1] == '0' || t[i + 1] == '1')) {
      out += t[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out += t[i];
    }
  }
  return out;
}

}  // namespace

std::string GbnfLiteral(const std::string& bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      static const char* hex = "0123456789ABCDEF";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string JsonGrammarBuilder::Fresh(const std::string& hint) {
  std::string name;
  for (char c : hint) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-') {
      name += c;
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
    if (name.size() >= 32) break;
  }
  if (name.empty()) name = "s";
  return name + "-" + std::to_string(next_++);
}

void JsonGrammarBuilder::AddRule(const std::string& name, const std::string& body) {
  rules_.emplace_back(name, body);
}

std::string JsonGrammarBuilder::Text() const {
  std::string out;
  for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
  return out;
}

std::string JsonGrammarBuilder::Blanks() { return Primitive("ws"); }
std::string JsonGrammarBuilder::AnyObject() { return Primitive("object"); }
std::string JsonGrammarBuilder::AnyValue() { return Primitive("value"); }

// The shared rules, each added once on first use.
std::string JsonGrammarBuilder::Primitive(const std::string& name) {
  const std::string key = "prim:" + name;
  auto it = defined_.find(key);
  if (it != defined_.end()) return it->second;
  const std::string rule = "j-" + name;
  defined_[key] = rule;
  std::string body;
  if (name == "ws") {
    // One space, or a line break and indentation: what JSON writers emit, and
    // never more than one line break in a row.
    body = "(\" \" | \"\\n\" [ \\t]{0," + std::to_string(kMaxJsonBlanks) + "})?";
  } else if (name == "char") {
    body = R"([^"\\\x00-\x1F\x7F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))";
  } else if (name == "string") {
    body = "\"\\\"\" " + Primitive("char") + "* \"\\\"\"";
  } else if (name == "integer") {
    body = R"("-"? ("0" | [1-9] [0-9]{0,15}))";
  } else if (name == "number") {
    body = Primitive("integer") + R"( ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?)";
  } else if (name == "boolean") {
    body = R"("true" | "false")";
  } else if (name == "null") {
    body = R"("null")";
  } else if (name == "value") {
    body = Primitive("object") + " | " + Primitive("array") + " | " + Primitive("string") + " | " +
           Primitive("number") + " | " + Primitive("boolean") + " | " + Primitive("null");
  } else if (name == "object") {
    const std::string ws = Primitive("ws"), kv = Primitive("string") + " " + ws + " \":\" " + ws +
                                                 " " + Primitive("value") + " " + ws;
    body = "\"{\" " + ws + " (" + kv + " (\",\" " + ws + " " + kv + ")*)? \"}\"";
  } else if (name == "array") {
    const std::string ws = Primitive("ws"), item = Primitive("value") + " " + ws;
    body = "\"[\" " + ws + " (" + item + " (\",\" " + ws + " " + item + ")*)? \"]\"";
  }
  AddRule(rule, body);
  return rule;
}

Result<std::string> JsonGrammarBuilder::AddSchema(const Json& schema, const std::string& hint) {
  doc_ = &schema;
  // $ref rules are per document.
  for (auto it = defined_.begin(); it != defined_.end();) {
    it = it->first.rfind("ref:", 0) == 0 ? defined_.erase(it) : std::next(it);
  }
  return Visit(schema, hint, 0);
}

Result<std::string> JsonGrammarBuilder::Visit(const Json& s, const std::string& hint, int depth) {
  if (depth > kMaxSchemaDepth) {
    return Refuse("the schema nests deeper than " + std::to_string(kMaxSchemaDepth));
  }
  if (s.is_boolean()) {
    if (s.get<bool>()) return AnyValue();
    return Refuse("a schema of 'false' matches nothing");
  }
  if (!s.is_object()) return Refuse("a schema must be an object");
  for (const auto& [key, v] : s.items()) {
    if (!Ignored().count(key) && !Handled().count(key)) {
      return Unsupported(
          "the schema keyword '" + key +
          "' is not supported by stet's constrained decoding (docs/api.md lists what "
          "is)");
    }
  }
  if (s.contains("$ref")) {
    if (!s["$ref"].is_string()) return Refuse("'$ref' must be a string");
    for (const auto& [key, v] : s.items()) {
      if (key != "$ref" && !Ignored().count(key)) {
        return Unsupported("'$ref' together with '" + key +
                           "' is not supported (put the constraint in the referenced schema)");
      }
    }
    return VisitRef(s["$ref"].get<std::string>(), hint, depth);
  }
  if (s.contains("const")) return GbnfLiteral(s["const"].dump());
  if (s.contains("enum")) {
    const Json& e = s["enum"];
    if (!e.is_array() || e.empty()) return Refuse("'enum' must be a non-empty array");
    std::string alts;
    for (const Json& v : e) alts += (alts.empty() ? "" : " | ") + GbnfLiteral(v.dump());
    const std::string rule = Fresh(hint);
    AddRule(rule, alts);
    return rule;
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!s.contains(key)) continue;
    const Json& list = s[key];
    if (!list.is_array() || list.empty()) {
      return Refuse(std::string("'") + key + "' must be a non-empty array");
    }
    if (std::string(key) == "oneOf") {
      if (auto pair = OverlappingBranches(list, *doc_)) {
        return Unsupported(
            "'oneOf' branches " + *pair +
            " may both match one value, and a grammar cannot enforce \"exactly one\": "
            "stet takes 'oneOf' only when its branches are provably disjoint (distinct "
            "types, const/enum values, or a required property with distinct "
            "const/enum values); use 'anyOf' if a value may match several");
      }
    }
    STET_ASSIGN_OR_RETURN(std::vector<std::string> parts, VisitBranches(list, hint, depth));
    std::string alts;
    for (const std::string& p : parts) alts += (alts.empty() ? "" : " | ") + p;
    const std::string rule = Fresh(hint);
    AddRule(rule, alts);
    return rule;
  }
  if (s.contains("allOf")) {
    const Json& list = s["allOf"];
    if (!list.is_array() || list.size() != 1) {
      return Refuse("'allOf' is supported with exactly one schema");
    }
    return Visit(list[0], hint, depth + 1);
  }
  if (s.contains("type")) {
    const Json& t = s["type"];
    if (t.is_string()) return VisitType(s, t.get<std::string>(), hint, depth);
    if (!t.is_array() || t.empty()) return Refuse("'type' must be a string or a non-empty array");
    std::string alts;
    for (const Json& one : t) {
      if (!one.is_string()) return Refuse("'type' entries must be strings");
      STET_ASSIGN_OR_RETURN(std::string r, VisitType(s, one.get<std::string>(), hint, depth));
      alts += (alts.empty() ? "" : " | ") + r;
    }
    const std::string rule = Fresh(hint);
    AddRule(rule, alts);
    return rule;
  }
  if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties") ||
      s.contains("propertyNames") || s.contains("minProperties") || s.contains("maxProperties")) {
    return VisitObject(s, hint, depth);
  }
  // Keywords of one type without "type": a value of that type (a subset of
  // what the schema allows, which also takes values of every other type).
  if (s.contains("items") || s.contains("minItems") || s.contains("maxItems") ||
      s.contains("prefixItems") || s.contains("uniqueItems")) {
    return VisitArray(s, hint, depth);
  }
  if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern") ||
      s.contains("format")) {
    return VisitType(s, "string", hint, depth);
  }
  if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
      s.contains("exclusiveMaximum") || s.contains("multipleOf")) {
    return VisitType(s, "number", hint, depth);
  }
  return AnyValue();
}

Result<std::string> JsonGrammarBuilder::VisitType(const Json& s, const std::string& type,
                                                  const std::string& hint, int depth) {
  if (type == "object") return VisitObject(s, hint, depth);
  if (type == "array") return VisitArray(s, hint, depth);
  if (type == "string") return VisitString(s, hint);
  if (type == "number" || type == "integer") return VisitNumber(s, type, hint);
  if (type == "boolean" || type == "null") return Primitive(type);
  return Refuse("unknown 'type' \"" + type + "\"");
}

Status JsonGrammarBuilder::Unsupported(const std::string& what) {
  unsupported_ = true;
  return InvalidArgument(what);
}

// anyOf / oneOf: each branch's rule. A branch stet cannot express (a pattern
// with a look-ahead, say) is left out when another branch remains: the grammar
// then takes a subset of the union, never more (pydantic's Decimal is
// number-or-pattern-string).
Result<std::vector<std::string>> JsonGrammarBuilder::VisitBranches(const Json& list,
                                                                   const std::string& hint,
                                                                   int depth) {
  std::vector<std::string> parts;
  Status first_error;
  for (const Json& branch : list) {
    const size_t n_rules = rules_.size();
    const auto defined = defined_;
    const int next = next_;
    unsupported_ = false;
    auto r = Visit(branch, hint, depth + 1);
    if (r.ok()) {
      parts.push_back(*r);
      continue;
    }
    if (!unsupported_) return r.status();
    if (first_error.ok()) first_error = r.status();
    rules_.resize(n_rules);  // undo what the branch added
    defined_ = defined;
    next_ = next;
  }
  unsupported_ = false;
  if (parts.empty()) {
    unsupported_ = true;
    return first_error;
  }
  return parts;
}

Result<std::string> JsonGrammarBuilder::VisitString(const Json& s, const std::string& hint) {
  STET_ASSIGN_OR_RETURN(int lo, ReadCount(s, "minLength", 0));
  STET_ASSIGN_OR_RETURN(int hi, ReadCount(s, "maxLength", -1));
  if (hi >= 0 && hi < lo) return Refuse("'maxLength' is below 'minLength'");
  std::optional<StringGrammar> shaped;
  if (s.contains("format")) {
    if (!s["format"].is_string()) return Refuse("'format' must be a string");
    shaped = FormatGbnf(s["format"].get<std::string>());
  }
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) return Refuse("'pattern' must be a string");
    if (shaped) return Unsupported("'pattern' together with 'format' is not supported");
    auto p = PatternToGbnf(s["pattern"].get<std::string>());
    if (!p.ok()) return Unsupported("'pattern': " + p.status().message());
    shaped = *p;
  }
  const std::string quote = "\"\\\"\"";
  if (shaped) {
    // A grammar cannot intersect a pattern with a length; the lengths must
    // already follow from it.
    if (shaped->min_len < lo || (hi >= 0 && (shaped->max_len < 0 || shaped->max_len > hi))) {
      return Unsupported(std::string("'minLength'/'maxLength' together with '") +
                         (s.contains("pattern") ? "pattern" : "format") +
                         "' are supported only where the pattern or format implies them");
    }
    const std::string rule = Fresh(hint);
    AddRule(rule, quote + " " + shaped->body + " " + quote);
    return rule;
  }
  if (lo == 0 && hi < 0) return Primitive("string");
  const std::string rule = Fresh(hint);
  AddRule(rule, quote + " " + Repeat(Primitive("char"), lo, hi) + " " + quote);
  return rule;
}

Result<std::string> JsonGrammarBuilder::VisitNumber(const Json& s, const std::string& type,
                                                    const std::string& hint) {
  if (s.contains("multipleOf")) {
    const Json& m = s["multipleOf"];
    if (!m.is_number() || m.get<double>() <= 0) {
      return Refuse("'multipleOf' must be a positive number");
    }
    if (type != "integer" || m.get<double>() != 1) {
      return Unsupported("'multipleOf' is supported only as 1 on integers");
    }
  }
  STET_ASSIGN_OR_RETURN(NumberBounds b, ReadNumberBounds(s));
  if (!b.any()) return Primitive(type);
  auto body = type == "integer" ? IntegerRangeGbnf(b) : NumberRangeGbnf(b);
  if (!body.ok()) return Unsupported(body.status().message());
  const std::string rule = Fresh(hint);
  AddRule(rule, *body);
  return rule;
}

Result<std::string> JsonGrammarBuilder::VisitObject(const Json& s, const std::string& hint,
                                                    int depth) {
  const std::string ws = Blanks();
  const Json props = s.value("properties", Json::object());
  if (!props.is_object()) return Refuse("'properties' must be an object");
  std::set<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) return Refuse("'required' must be an array of names");
    for (const Json& r : s["required"]) {
      if (!r.is_string()) return Refuse("'required' must be an array of names");
      if (!props.contains(r.get<std::string>())) {
        return Refuse("'required' names '" + r.get<std::string>() +
                      "', which is not in 'properties'");
      }
      required.insert(r.get<std::string>());
    }
  }
  const Json extra = s.value("additionalProperties", Json(false));
  const bool extra_allowed = !(extra.is_boolean() && !extra.get<bool>());
  if (extra_allowed && !props.empty()) {
    return Refuse(
        "'additionalProperties' other than false together with 'properties' is not supported");
  }
  const bool counted =
      s.contains("propertyNames") || s.contains("minProperties") || s.contains("maxProperties");
  if (!props.empty() && counted) {
    return Unsupported(
        "'propertyNames', 'minProperties' and 'maxProperties' are supported only on objects "
        "without 'properties' (a map, as pydantic's dict)");
  }
  if (props.empty()) return VisitMap(s, hint, depth);
  // kv_i, then rest_i (properties i.. after at least one: each after a comma)
  // and first_i (properties i.. with none before).
  std::vector<std::string> names, kvs;
  for (const auto& [name, sub] : props.items()) {
    STET_ASSIGN_OR_RETURN(std::string value, Visit(sub, hint + "-" + name, depth + 1));
    names.push_back(name);
    kvs.push_back(GbnfLiteral(Json(name).dump()) + " " + ws + " \":\" " + ws + " " + value + " " +
                  ws);
  }
  const size_t n = names.size();
  const std::string base = Fresh(hint);
  auto rest = [&](size_t i) { return base + "-r" + std::to_string(i); };
  auto first = [&](size_t i) { return base + "-f" + std::to_string(i); };
  for (size_t i = n; i-- > 0;) {
    const bool req = required.count(names[i]) > 0;
    const std::string next = i + 1 < n ? " " + rest(i + 1) : "";
    const std::string with = "\",\" " + ws + " " + kvs[i] + next;
    AddRule(rest(i), req ? with : "(" + with + ")" + (next.empty() ? "?" : " |" + next));
    const std::string first_next = i + 1 < n ? first(i + 1) : "\"\"";
    AddRule(first(i), kvs[i] + next + (req ? "" : " | " + first_next));
  }
  AddRule(base, "\"{\" " + ws + " " + first(0) + " \"}\"");
  return base;
}

// An object without properties (a map): keys from `propertyNames` (a string
// schema: lengths, pattern, format, enum/const of strings), values from
// additionalProperties (false: none; true or absent: any value — absent
// beside an empty "properties": none, as OpenAI's strict mode reads it),
// between minProperties and maxProperties entries.
Result<std::string> JsonGrammarBuilder::VisitMap(const Json& s, const std::string& hint,
                                                 int depth) {
  const std::string ws = Blanks();
  if (!s.contains("additionalProperties") && !s.contains("properties") &&
      !s.contains("propertyNames") && !s.contains("minProperties") &&
      !s.contains("maxProperties")) {
    return AnyObject();  // {"type": "object"}: any object
  }
  const Json extra = s.value("additionalProperties", Json(!s.contains("properties")));
  STET_ASSIGN_OR_RETURN(int lo, ReadCount(s, "minProperties", 0));
  STET_ASSIGN_OR_RETURN(int hi, ReadCount(s, "maxProperties", -1));
  if (extra.is_boolean() && !extra.get<bool>()) hi = 0;
  if (hi >= 0 && hi < lo) return Refuse("'maxProperties' is below 'minProperties'");
  if (hi == 0) {
    const std::string rule = Fresh(hint);
    AddRule(rule, "\"{\" " + ws + " \"}\"");
    return rule;
  }
  std::string key = Primitive("string");
  if (s.contains("propertyNames")) {
    const Json& names = s["propertyNames"];
    if (!names.is_object()) return Refuse("'propertyNames' must be a schema");
    if (names.contains("type") && names["type"] != "string")
      return Refuse("'propertyNames' must describe strings");
    for (const char* k : {"enum", "const"}) {
      if (!names.contains(k)) continue;
      const Json list = std::string(k) == "const" ? Json::array({names[k]}) : names[k];
      if (!list.is_array()) return Refuse("'propertyNames.enum' must be an array");
      for (const Json& v : list) {
        if (!v.is_string()) return Refuse("'propertyNames' may name only strings");
      }
    }
    Json as_string = names;
    if (!names.contains("enum") && !names.contains("const")) as_string["type"] = "string";
    STET_ASSIGN_OR_RETURN(key, Visit(as_string, hint + "-key", depth + 1));
  }
  std::string value = AnyValue();
  if (!extra.is_boolean()) {
    STET_ASSIGN_OR_RETURN(value, Visit(extra, hint + "-value", depth + 1));
  }
  const std::string kv = key + " " + ws + " \":\" " + ws + " " + value + " " + ws;
  const std::string rule = Fresh(hint);
  const std::string more = "\",\" " + ws + " " + kv;
  const std::string entries = kv + " " + Repeat(more, std::max(lo - 1, 0), hi < 0 ? -1 : hi - 1);
  AddRule(rule, "\"{\" " + ws + " " + (lo == 0 ? "(" + entries + ")?" : entries) + " \"}\"");
  return rule;
}

// Arrays: prefixItems[i] for the first items, then `items` (false: no more;
// absent: any value), between minItems and maxItems. Item i is rule tail_i:
// the items from i on, each after a comma.
Result<std::string> JsonGrammarBuilder::VisitArray(const Json& s, const std::string& hint,
                                                   int depth) {
  const std::string ws = Blanks();
  if (s.contains("uniqueItems")) {
    if (!s["uniqueItems"].is_boolean()) return Refuse("'uniqueItems' must be a boolean");
    if (s["uniqueItems"].get<bool>() && s.value("maxItems", Json(2)) != Json(0) &&
        s.value("maxItems", Json(2)) != Json(1)) {
      return Unsupported("'uniqueItems': true cannot be enforced by a grammar");
    }
  }
  std::vector<std::string> prefix;
  if (s.contains("prefixItems")) {
    if (!s["prefixItems"].is_array()) return Refuse("'prefixItems' must be an array of schemas");
    for (size_t i = 0; i < s["prefixItems"].size(); ++i) {
      STET_ASSIGN_OR_RETURN(std::string r,
                            Visit(s["prefixItems"][i], hint + "-" + std::to_string(i), depth + 1));
      prefix.push_back(r);
    }
  }
  std::optional<std::string> item = AnyValue();
  if (s.contains("items")) {
    if (s["items"].is_boolean() && !s["items"].get<bool>()) {
      item.reset();
    } else {
      STET_ASSIGN_OR_RETURN(item, Visit(s["items"], hint + "-item", depth + 1));
    }
  }
  STET_ASSIGN_OR_RETURN(int lo, ReadCount(s, "minItems", 0));
  STET_ASSIGN_OR_RETURN(int hi, ReadCount(s, "maxItems", -1));
  const int n = static_cast<int>(prefix.size());
  if (!item) hi = hi < 0 ? n : std::min(hi, n);
  if (hi >= 0 && hi < lo) return Refuse("'maxItems' (or the tuple's length) is below 'minItems'");
  const std::string rule = Fresh(hint);
  const std::string comma = "\",\" " + ws + " ";
  // The items from index i on (i items already written), or "" for none.
  std::string tail;
  if (item && (hi < 0 || hi > n)) {
    const int more_lo = std::max(lo - n, 0), more_hi = hi < 0 ? -1 : hi - n;
    tail = Repeat(comma + *item + " " + ws, more_lo, more_hi);
  }
  for (int i = std::min(n, hi < 0 ? n : hi); i-- > 0;) {
    const std::string one = (i ? comma : "") + prefix[i] + " " + ws;
    const std::string with = tail.empty() ? one : one + " " + tail;
    const std::string name = rule + "-t" + std::to_string(i);
    AddRule(name, i >= lo ? "(" + with + ")?" : with);
    tail = name;
  }
  std::string body;
  if (n > 0 || hi == 0) {
    body = "\"[\" " + ws + (tail.empty() ? "" : " " + tail) + " \"]\"";
  } else {  // no prefix: the first item has no comma
    const std::string one = *item + " " + ws;
    const std::string more = comma + one;
    if (lo == 0) {
      body = "\"[\" " + ws + " (" + one + " " + Repeat(more, 0, hi < 0 ? -1 : hi - 1) + ")? \"]\"";
    } else {
      body =
          "\"[\" " + ws + " " + one + " " + Repeat(more, lo - 1, hi < 0 ? -1 : hi - 1) + " \"]\"";
    }
  }
  AddRule(rule, body);
  return rule;
}

Result<std::string> JsonGrammarBuilder::VisitRef(const std::string& ref, const std::string& hint,
                                                 int depth) {
  const std::string key = "ref:" + ref;
  auto it = defined_.find(key);
  if (it != defined_.end()) return it->second;
  if (ref.empty() || ref[0] != '#') {
    return Refuse("'$ref' \"" + ref + "\" is not local (only \"#...\" references are supported)");
  }
  const Json* node = doc_;
  size_t pos = 1;
  if (pos < ref.size() && ref[pos] != '/') return Refuse("'$ref' \"" + ref + "\" is malformed");
  while (pos < ref.size()) {
    const size_t next = ref.find('/', pos + 1);
    const std::string token = Unescape(ref.substr(pos + 1, next - pos - 1));
    if (node->is_object() && node->contains(token)) {
      node = &(*node)[token];
    } else if (node->is_array() && !token.empty() &&
               token.find_first_not_of("0123456789") == std::string::npos && token.size() < 9 &&
               std::stoul(token) < node->size()) {
      node = &(*node)[std::stoul(token)];
    } else {
      return Refuse("'$ref' \"" + ref + "\" does not resolve within the schema");
    }
    pos = next == std::string::npos ? ref.size() : next;
  }
  // Named before it is visited, so a recursive reference finds it.
  const std::string rule = Fresh(ref.size() > 1 ? ref.substr(ref.rfind('/') + 1) : hint);
  defined_[key] = rule;
  STET_ASSIGN_OR_RETURN(std::string body, Visit(*node, rule, depth + 1));
  AddRule(rule, body);
  return rule;
}

Result<std::string> JsonSchemaToGbnf(const Json& schema) {
  JsonGrammarBuilder b;
  STET_ASSIGN_OR_RETURN(std::string top, b.AddSchema(schema, "schema"));
  b.AddRule("root", top);
  return b.Text();
}

std::string JsonObjectGbnf() {
  JsonGrammarBuilder b;
  const std::string top = b.AnyObject();
  b.AddRule("root", top);
  return b.Text();
}

}  // namespace stet::server
