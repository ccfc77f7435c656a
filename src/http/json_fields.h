// Typed, range-checked reads of request-body fields, and UTF-8 helpers. Each
// reader leaves the output untouched when the field is absent or null and
// returns a 400 naming the field (param) when it has the wrong type or range,
// so a hostile body can only ever produce an ApiError.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "http/api_error.h"

namespace stet::server {

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool IsValidUtf8(std::string_view s);
// `s` with every maximal ill-formed subsequence replaced by U+FFFD.
std::string SanitizeUtf8(std::string_view s);

constexpr int kMaxJsonDepth = 64;

// Parses a request body: must be valid UTF-8, a JSON object, nested at most kMaxJsonDepth deep.
// Time and memory are linear in the body's size, whatever its objects hold (unknown fields
// included; a repeated key keeps its last value).
ApiOr<Json> ParseBody(std::string_view body);

// Empties `j` bottom-up without allocating. nlohmann's destructor moves a
// container's children onto a heap stack as large as the container, so the
// destruction of a big DOM under memory pressure throws inside a noexcept
// destructor (std::terminate). Bodies from ParseBody are released with this.
void ReleaseJson(Json& j) noexcept;

// Releases a parsed body when it goes out of scope (see ReleaseJson).
class ReleaseOnExit {
 public:
  explicit ReleaseOnExit(ApiOr<Json>& body) : body_(body) {}
  ~ReleaseOnExit();
  ReleaseOnExit(const ReleaseOnExit&) = delete;
  ReleaseOnExit& operator=(const ReleaseOnExit&) = delete;

 private:
  ApiOr<Json>& body_;
};

// Absent or null fields leave *out as it is; the functions return the error, if any.
std::optional<ApiError> ReadBool(const Json& obj, const char* key, bool* out);
// Integers (or floats with an integral value) in [lo, hi].
std::optional<ApiError> ReadInt(const Json& obj, const char* key, int64_t lo, int64_t hi,
                                int64_t* out);
std::optional<ApiError> ReadInt(const Json& obj, const char* key, int lo, int hi, int* out);
// Any 32-bit integer (where the range is the engine's to check).
std::optional<ApiError> ReadInt(const Json& obj, const char* key, int* out);
// Any finite number (where the range is the engine's to check; one beyond
// float's range becomes infinite, which the engine refuses).
std::optional<ApiError> ReadFloat(const Json& obj, const char* key, float* out);
std::optional<ApiError> ReadString(const Json& obj, const char* key, std::string* out);
// A message's or tool's optional string member: obj[key] copied into (*to)[key]; one that
// is not a string is "'<path>.<key>' must be a string" (param <path>.<key>).
std::optional<ApiError> CopyString(const Json& obj, const char* key, const std::string& path,
                                   Json* to);
// Any integer in [-2^63, 2^64): negative values wrap to uint64 (two's complement).
std::optional<ApiError> ReadSeed(const Json& obj, const char* key, std::optional<uint64_t>* out);

// "a JSON type name" for messages ("string", "array", ...).
const char* TypeName(const Json& v);

}  // namespace stet::server
