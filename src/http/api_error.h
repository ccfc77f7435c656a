// Errors as the OpenAI API reports them: an HTTP status plus the JSON body
// {"error": {"message", "type", "param", "code"}}. Invariant: every failure a
// client can cause maps to one of these (a 4xx) — never to a crash or a 500 —
// and ApiOr<T> carries either a value or such an error through the parsers.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>

namespace stet::server {

using Json = nlohmann::ordered_json;

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // empty: null
  std::string code;   // empty: null
};

// 400 invalid_request_error.
ApiError BadRequest(std::string message, std::string param = "", std::string code = "");
// 404 model_not_found.
ApiError ModelNotFound(const std::string& model);
// 400 context_length_exceeded.
ApiError ContextLengthExceeded(std::string message, std::string param);

// {"error": {...}}
Json ErrorJson(const ApiError& e);
// The body text (UTF-8 safe).
std::string ErrorBody(const ApiError& e);

// The JSON text of `j`, never throwing: invalid UTF-8 in a string becomes U+FFFD.
std::string Dump(const Json& j);

template <typename T>
class ApiOr {
 public:
  ApiOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  ApiOr(ApiError error) : error_(std::move(error)) {}  // NOLINT
  bool ok() const { return value_.has_value(); }
  const ApiError& error() const { return error_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }

 private:
  std::optional<T> value_;
  ApiError error_;
};

// Returns the error of `expr` (a std::optional<ApiError>) from the enclosing
// function when it holds one: the parsers' early exit.
#define STET_API_TRY(expr)                      \
  do {                                          \
    if (auto stet_e_ = (expr)) return *stet_e_; \
  } while (0)

}  // namespace stet::server
