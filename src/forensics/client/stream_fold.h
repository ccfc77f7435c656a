// What `stet proxy` needs from the OpenAI wire format beyond openai.h: folding
// a stream's chunks into the answer a non-streamed request would have got (all
// choices, tool calls, logprobs, usage), spotting a stream's final event, the
// snapshot of the parts of a request that shape an answer, and removing the
// logprobs the proxy asked for on the client's behalf. Pure functions of JSON.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "forensics/client/sse.h"

namespace stet::forensics {

using WireJson = nlohmann::ordered_json;

enum class ApiKind { kChat, kCompletions, kResponses, kOther };
ApiKind ApiKindOfPath(const std::string& path);  // "/v1/chat/completions" -> kChat, ...

// The event after which a stream carries nothing but its end: `data: [DONE]`
// (chat, completions), or response.completed / .incomplete / .failed (responses).
bool IsTerminalEvent(ApiKind kind, const SseEvent& e);

class StreamFold {
 public:
  explicit StreamFold(ApiKind kind) : kind_(kind) {}
  // One event of the stream (its data parsed here; non-JSON data is counted and skipped).
  void Add(const SseEvent& e);
  // The answer so far, in the non-streamed shape of the endpoint.
  WireJson Result() const;
  // An event carried generated content (text, a tool call, a refusal) for the first time.
  bool content_seen() const { return content_seen_; }
  int events() const { return events_; }
  int bad_events() const { return bad_events_; }
  // An `error` object some servers send mid-stream.
  const std::optional<WireJson>& error() const { return error_; }

 private:
  void AddChat(const WireJson& j);
  void AddCompletion(const WireJson& j);
  void AddResponses(const WireJson& j);

  ApiKind kind_;
  WireJson top_ = WireJson::object();    // id, object, created, model, system_fingerprint, usage
  std::map<int64_t, WireJson> choices_;  // by choice index
  std::optional<WireJson> response_;     // responses: the final `response` object
  std::string responses_text_;           // responses: output_text deltas, if no final object
  std::optional<WireJson> error_;
  bool content_seen_ = false;
  int events_ = 0, bad_events_ = 0;
};

// Sets choices[*].logprobs to null in a chat/completions answer or chunk (what
// an endpoint sends when none were asked for). True when something changed.
bool StripChoiceLogprobs(WireJson& answer);

// The parts of a request that shape the answer besides the user's turn: system
// and developer messages, `instructions`, tool schemas, tool_choice,
// response_format (`text.format` for responses). Null when the request has none.
WireJson AnswerShapingSnapshot(const WireJson& request);
// Canonical text: object keys sorted, no spaces (the snapshot's SHA-256 is taken over it).
std::string CanonicalJson(const WireJson& j);

}  // namespace stet::forensics
