// What `stet serve --record` stores per request: the body as received, the
// resolved engine parameters (seed made explicit), fingerprint, model and chat
// template hashes, the frozen clock the template saw, the prompt token ids and
// every choice's tokens, logprobs and finish reason. Also the frozen clock a
// client may pin with metadata.stet_clock. Invariant: a record holds all that
// shaped its answer, so replaying it against the same fingerprint must give
// the same bytes (docs/forensics.md, "Record and replay").
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/utc_time.h"
#include "engine/request.h"
#include "http/api_error.h"
#include "server/openai/response.h"
#include "server/recorder.h"

namespace stet::server {

constexpr const char* kRecordSchema = "stet.record/1";

// "2024-07-26T12:00:00Z", "2024-07-26T12:00:00.250+02:00" -> Unix seconds
// (fractions dropped); nullopt when not such a time in years 1970..9999.
std::optional<int64_t> ParseUtcTime(std::string_view s);
// Unix seconds -> "2024-07-26T12:00:00Z".
std::string FormatUtcTime(int64_t unix_s);

// metadata.stet_clock: the instant the chat template's strftime_now() sees.
// Absent (or metadata not an object): nullopt; malformed: a 400.
ApiOr<std::optional<int64_t>> ReadStetClock(const Json& body);

struct RecordContext {
  Json request;             // the body as received
  std::string id;           // the response id ("cmpl-...", "chatcmpl-...")
  std::string endpoint;     // "/v1/completions" or "/v1/chat/completions"
  std::string received_at;  // NowIso8601() when the handler started
  uint64_t seed = 0;
  bool seed_generated = false;  // the client sent none
  std::string model;            // the served model id
  std::string fingerprint, fingerprint_descriptor, model_sha256;
  int64_t clock_unix = 0;  // what strftime_now() saw (chat)
  bool clock_from_client = false;
  bool chat = false;
  std::string template_sha256;  // chat: SHA-256 of the template text rendered
  bool template_fallback = false;
  std::string rendered_prompt;        // chat: the template's output
  std::vector<RequestParams> params;  // per prompt, as submitted (prompt ids included)
};

// The record: the context plus every choice (index = prompt * n + choice).
Json BuildRecord(const RecordContext& c, const std::vector<ChoiceResult>& choices,
                 const UsageCounts& usage);

using RecordFn = std::function<Json(const std::vector<ChoiceResult>&, const UsageCounts&)>;

// Builds and stores the record; a 500 "record_failed" when the recorder says no.
std::optional<ApiError> CommitRecord(RequestRecorder& recorder, const RecordFn& build,
                                     const std::vector<ChoiceResult>& choices,
                                     const UsageCounts& usage);

}  // namespace stet::server
