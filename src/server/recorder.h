// The hook `stet serve --record` plugs a durable store into. The server calls
// Record() on the HTTP worker that serves the request, after generation and
// BEFORE the response (or a stream's final event) is written. Invariant: a
// request the client saw answered has been recorded — when Record() fails the
// client gets an error instead of the answer. The server does not know how
// records are stored (src/forensics/store/record_store.h does; src/tools wires it).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace stet::server {

class RequestRecorder {
 public:
  virtual ~RequestRecorder() = default;
  // Durably stores one record (schema: docs/forensics.md, "Record"). Called
  // from many HTTP worker threads at once; returns only when the record would
  // survive a crash of the process (or with the error that prevented it).
  virtual Status Record(const nlohmann::ordered_json& record) = 0;
};

}  // namespace stet::server
