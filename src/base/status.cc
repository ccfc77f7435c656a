#include "base/status.h"

#include "base/enum_names.h"

namespace stet {

namespace {

constexpr EnumName<StatusCode> kStatusCodeNames[] = {
    {StatusCode::kOk, "OK"},
    {StatusCode::kInvalidArgument, "InvalidArgument"},
    {StatusCode::kNotFound, "NotFound"},
    {StatusCode::kOutOfRange, "OutOfRange"},
    {StatusCode::kUnimplemented, "Unimplemented"},
    {StatusCode::kDataLoss, "DataLoss"},
    {StatusCode::kResourceExhausted, "ResourceExhausted"},
    {StatusCode::kIoError, "IoError"},
    {StatusCode::kCancelled, "Cancelled"},
    {StatusCode::kInternal, "Internal"}};

}  // namespace

const char* StatusCodeName(StatusCode code) { return NameOf(kStatusCodeNames, code, "Unknown"); }

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

}  // namespace stet
