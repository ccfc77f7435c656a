// Status and Result<T>: how stet reports expected failures (bad files, bad
// requests, full caches). Programmer errors use STET_CHECK (check.h) instead.
// Exceptions never cross a layer boundary; these values do.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "base/check.h"

namespace stet {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // the caller passed something malformed
  kNotFound,           // a named thing (file, key, tensor) does not exist
  kOutOfRange,         // a value or offset beyond what is allowed
  kUnimplemented,      // a valid but unsupported feature (type, architecture)
  kDataLoss,           // a corrupt or truncated file
  kResourceExhausted,  // a full queue, cache or context
  kIoError,            // the OS refused (open, mmap, read)
  kCancelled,          // the work was cancelled by its owner
  kInternal,           // a bug that we still report instead of aborting
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "DataLoss: tensor 'x' ends past the file (offset 123)".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  // Reading the value of a failed Result is a programmer error: it aborts
  // with the status, never reads an empty optional.
  T& value() & { return Checked(), *value_; }
  const T& value() const& { return Checked(), *value_; }
  T&& value() && { return Checked(), std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void Checked() const {
    if (__builtin_expect(!value_.has_value(), 0)) {
      ::stet::internal::CheckFailed(__FILE__, __LINE__, "Result::ok()", status_.ToString().c_str());
    }
  }

  std::optional<T> value_;
  Status status_ = Internal("Result holds no value and no status");
};

}  // namespace stet

#define STET_CONCAT_INNER(a, b) a##b
#define STET_CONCAT(a, b) STET_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not ok.
#define STET_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::stet::Status stet_status_ = (expr);        \
    if (!stet_status_.ok()) return stet_status_; \
  } while (0)

// `STET_ASSIGN_OR_RETURN(auto x, MakeX());` — unwraps a Result or returns its Status.
#define STET_ASSIGN_OR_RETURN(lhs, expr) \
  STET_ASSIGN_OR_RETURN_IMPL(STET_CONCAT(stet_result_, __LINE__), lhs, expr)
#define STET_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
