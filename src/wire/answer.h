// The answers of OpenAI-compatible endpoints, read and written by one module:
// a chat.completion, text_completion or Responses object — or one stream
// chunk of the first two — read into one Answer (choices, their texts, token
// logprobs in either shape, tool calls, stet's token ids, usage), and the
// tool_calls array `stet serve` writes. The forensics tools read every
// endpoint's answers through ReadAnswer; the server's tests read the server's
// own answers through it. Invariant: reading never throws and never guesses:
// a member of another type reads as absent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "wire/json_read.h"

namespace stet::wire {

enum class ApiKind { kChat, kCompletions, kResponses, kOther };
ApiKind ApiKindOfPath(const std::string& path);  // "/v1/chat/completions" -> kChat, ...

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON object's text, as sent
};

// [{"id", "type": "function", "function": {"name", "arguments"}}]; with
// `indexed` (stream deltas) each entry also carries its "index".
Json ToolCallsJson(const std::vector<ToolCall>& calls, bool indexed);

struct AnswerToken {
  std::string token;                 // as sent ("" when not a string)
  std::optional<std::string> bytes;  // chat: the token's exact bytes, when sent
  std::optional<double> logprob;
  // The alternatives in the order sent: chat's [{"token", "logprob"}] or
  // completions' {"token": logprob}.
  std::vector<std::pair<std::string, std::optional<double>>> top;
};

struct AnswerChoice {
  int64_t index = 0;
  // message.content (chat), delta.content (a chat chunk), text (completions),
  // the message items' output_text (Responses).
  std::string text;
  // A logprobs object in either shape was sent: chat's content list (also the
  // Responses output_text parts' logprobs) or completions' four arrays.
  bool has_logprobs = false;
  std::vector<AnswerToken> tokens;
  std::vector<ToolCall> tool_calls;  // message.tool_calls, or the function_call items
  std::string finish_reason;         // "" when absent (Responses: see Answer::status)
  // stet's return_token_ids: the choice's generated ids, and (completions) its prompt's.
  std::optional<std::vector<int64_t>> token_ids, prompt_token_ids;
};

struct Answer {
  std::string id, object, model, system_fingerprint;
  std::string status;  // Responses: "completed", "incomplete", "failed"
  bool has_choices = false;
  std::vector<AnswerChoice> choices;  // by index (a stable sort: equal indexes keep their order)
  std::optional<std::vector<int64_t>> prompt_token_ids;  // chat and Responses: the top level's
  Json usage;                                            // as sent; null when absent
  Json error;  // the body's "error" member; null when there is none
};

// `kind` kOther: the shape is read off the body ("choices": chat or
// completions, each choice by its members; "output": Responses).
Answer ReadAnswer(const Json& body, ApiKind kind = ApiKind::kOther);

}  // namespace stet::wire
