// Field readers for request bodies and a strict UTF-8 validator (RFC 3629
// well-formedness, Unicode's "maximal subpart" replacement for sanitizing).
#include "http/json_fields.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/json_text.h"

namespace stet::server {

namespace {

// Length of the well-formed sequence starting at s[i], or 0 when ill-formed;
// *bad_len gets the length of the maximal ill-formed subpart then (>= 1).
size_t Utf8SeqLen(std::string_view s, size_t i, size_t* bad_len) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  *bad_len = 1;
  if (c < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // <= U+10FFFF
  } else {
    return 0;
  }
  for (size_t k = 1; k <= need; ++k) {
    if (i + k >= s.size()) {
      *bad_len = k;
      return 0;
    }
    const unsigned char x = b(i + k);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (x < l || x > h) {
      *bad_len = k;
      return 0;
    }
  }
  return need + 1;
}

std::optional<ApiError> TypeError(const char* key, const char* want, const Json& v) {
  return BadRequest(std::string("'") + key + "' must be " + want + ", not " + TypeName(v), key);
}

void ReleaseAt(Json& j, int depth) noexcept {
  if (depth > 4 * kMaxJsonDepth) return;  // deeper than any parsed body: nlohmann's way
  if (j.is_array()) {
    Json::array_t& a = *j.get_ptr<Json::array_t*>();
    for (Json& x : a) ReleaseAt(x, depth + 1);
    a.clear();  // scalars and empty containers: no allocation in their destructors
  } else if (j.is_object()) {
    Json::object_t& o = *j.get_ptr<Json::object_t*>();
    for (auto& kv : o) ReleaseAt(kv.second, depth + 1);
    o.clear();
  }
}

// Builds a body's DOM in time linear in its size. nlohmann's own builder
// inserts every key into an ordered_map by linear search, so one object of N
// keys — even in a field nobody reads — costs O(N^2) (100k keys: 29 s). Here
// each open object keeps a hash index of its keys; a repeated key replaces the
// earlier value in the earlier place, as nlohmann's parser does.
class LinearBuilder {
 public:
  bool null() { return Put(Json(nullptr)); }
  bool boolean(bool v) { return Put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return Put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return Put(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string&) { return Put(Json(v)); }
  bool string(std::string& v) { return Put(Json(std::move(v))); }
  bool binary(Json::binary_t&) { return false; }  // not JSON text
  bool start_object(std::size_t) { return Open(Json::object()); }
  bool key(std::string& k) {
    stack_.back().key = std::move(k);
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(std::size_t) { return Open(Json::array()); }
  bool end_array() { return Close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }
  Json Take() { return std::move(result_); }
  ~LinearBuilder() {  // a parse cut short (bad_alloc) leaves its partial DOM here
    for (Frame& f : stack_) ReleaseAt(f.value, 0);
    ReleaseAt(result_, 0);
  }
  LinearBuilder() = default;
  LinearBuilder(const LinearBuilder&) = delete;
  LinearBuilder& operator=(const LinearBuilder&) = delete;

 private:
  struct Frame {
    Json value;
    std::unordered_map<std::string, size_t> index;  // key -> position (objects)
    std::string key;                                // the key the next value belongs to
  };
  bool Open(Json v) {
    stack_.push_back(Frame{std::move(v), {}, {}});
    return true;
  }
  bool Close() {
    Json v = std::move(stack_.back().value);
    stack_.pop_back();
    return Put(std::move(v));
  }
  bool Put(Json v) {
    if (stack_.empty()) {
      result_ = std::move(v);
      return true;
    }
    Frame& f = stack_.back();
    if (f.value.is_array()) {
      f.value.get_ref<Json::array_t&>().push_back(std::move(v));
      return true;
    }
    auto& items = static_cast<Json::object_t::Container&>(f.value.get_ref<Json::object_t&>());
    const auto [at, fresh] = f.index.try_emplace(f.key, items.size());
    if (fresh) {
      items.emplace_back(std::move(f.key), std::move(v));
    } else {
      items[at->second].second = std::move(v);
    }
    return true;
  }

  std::vector<Frame> stack_;
  Json result_;
};

}  // namespace

bool IsValidUtf8(std::string_view s) {
  size_t bad = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SeqLen(s, i, &bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string SanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t bad = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SeqLen(s, i, &bad);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      i += bad;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

const char* TypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

void ReleaseJson(Json& j) noexcept { ReleaseAt(j, 0); }

ReleaseOnExit::~ReleaseOnExit() {
  if (body_.ok()) ReleaseJson(*body_);
}

ApiOr<Json> ParseBody(std::string_view body) {
  if (!IsValidUtf8(body)) return BadRequest("The request body is not valid UTF-8.");
  // Nesting is bounded before parsing: later consumers (templates, dumps) recurse.
  int depth = 0;
  JsonStringTracker strings;
  for (char c : body) {
    if (strings.InString(c)) continue;
    if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return BadRequest("The request body nests JSON deeper than " +
                          std::to_string(kMaxJsonDepth) + " levels.");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  LinearBuilder builder;
  bool parsed = false;
  try {
    parsed = Json::sax_parse(body.data(), body.data() + body.size(), &builder);
  } catch (const nlohmann::json::exception&) {
    parsed = false;
  }
  Json j = parsed ? builder.Take() : Json(Json::value_t::discarded);
  if (j.is_discarded()) {
    return BadRequest(
        "The request body is not valid JSON (expected an object such as {\"model\": ...}).");
  }
  if (!j.is_object())
    return BadRequest(std::string("The request body must be a JSON object, not ") + TypeName(j) +
                      ".");
  return j;
}

std::optional<ApiError> ReadBool(const Json& obj, const char* key, bool* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return TypeError(key, "a boolean", *it);
  *out = it->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> ReadInt(const Json& obj, const char* key, int64_t lo, int64_t hi,
                                int64_t* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  const Json& v = *it;
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  const auto out_of_range = [&] {
    return BadRequest(std::string("'") + key + "' must be an integer in " + range, key);
  };
  int64_t x;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return out_of_range();
    x = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) return TypeError(key, "an integer", v);
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) return out_of_range();
    x = static_cast<int64_t>(d);
  } else {
    return TypeError(key, "an integer", v);
  }
  if (x < lo || x > hi) return out_of_range();
  *out = x;
  return std::nullopt;
}

std::optional<ApiError> ReadInt(const Json& obj, const char* key, int lo, int hi, int* out) {
  int64_t x = *out;
  auto e = ReadInt(obj, key, static_cast<int64_t>(lo), static_cast<int64_t>(hi), &x);
  if (e) return e;
  *out = static_cast<int>(x);
  return std::nullopt;
}

std::optional<ApiError> ReadInt(const Json& obj, const char* key, int* out) {
  return ReadInt(obj, key, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), out);
}

std::optional<ApiError> ReadFloat(const Json& obj, const char* key, float* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return TypeError(key, "a number", *it);
  const double d = it->get<double>();
  if (!std::isfinite(d))
    return BadRequest(std::string("'") + key + "' must be a finite number", key);
  *out = static_cast<float>(d);
  return std::nullopt;
}

std::optional<ApiError> ReadString(const Json& obj, const char* key, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return TypeError(key, "a string", *it);
  *out = it->get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> CopyString(const Json& obj, const char* key, const std::string& path,
                                   Json* to) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  const std::string param = path + "." + key;
  if (!it->is_string()) return BadRequest("'" + param + "' must be a string", param);
  (*to)[key] = *it;
  return std::nullopt;
}

std::optional<ApiError> ReadSeed(const Json& obj, const char* key, std::optional<uint64_t>* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  const Json& v = *it;
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
  } else if (v.is_number_integer()) {
    *out = static_cast<uint64_t>(v.get<int64_t>());
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9007199254740992.0)
      return TypeError(key, "an integer", v);
    *out = static_cast<uint64_t>(static_cast<int64_t>(d));
  } else {
    return TypeError(key, "an integer", v);
  }
  return std::nullopt;
}

}  // namespace stet::server
