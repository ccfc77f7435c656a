// A stream folded into the answer a non-streamed request would have got (all
// choices, tool calls, logprobs, usage), and a stream's final event spotted,
// for any of the three wire shapes. `stet proxy` records streams through it;
// the server's tests check with it that `stet serve`'s streams fold into its
// non-streamed answers. Pure functions of JSON.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "wire/answer.h"
#include "wire/sse.h"

namespace stet::wire {

// The event after which a stream carries nothing but its end: `data: [DONE]`
// (chat, completions), or response.completed / .incomplete / .failed (responses).
bool IsTerminalEvent(ApiKind kind, const SseEvent& e);

class StreamFold {
 public:
  explicit StreamFold(ApiKind kind) : kind_(kind) {}
  // One event of the stream (its data parsed here; non-JSON data is counted and skipped).
  void Add(const SseEvent& e);
  // The answer so far, in the non-streamed shape of the endpoint.
  Json Result() const;
  // An event carried generated content (text, a tool call, a refusal) for the first time.
  bool content_seen() const { return content_seen_; }
  int events() const { return events_; }
  int bad_events() const { return bad_events_; }
  // An `error` object some servers send mid-stream.
  const std::optional<Json>& error() const { return error_; }

 private:
  // Each choice of chunk `j` into its folded choice (`fresh` when it is new), by `merge`.
  void AddChoices(const Json& j, void (StreamFold::*merge)(const Json& choice, Json& out),
                  const Json& fresh);
  void AddChat(const Json& j);
  void MergeChat(const Json& choice, Json& out);
  void AddCompletion(const Json& j);
  void MergeCompletion(const Json& choice, Json& out);
  void AddResponses(const Json& j);

  ApiKind kind_;
  Json top_ = Json::object();        // id, object, created, model, system_fingerprint, usage
  std::map<int64_t, Json> choices_;  // by choice index
  std::optional<Json> response_;     // responses: the final `response` object
  std::string responses_text_;       // responses: output_text deltas, if no final object
  std::optional<Json> error_;
  bool content_seen_ = false;
  int events_ = 0, bad_events_ = 0;
};

}  // namespace stet::wire
