// Response bodies and SSE chunks of the completion endpoints, in OpenAI's
// shapes (text_completion, chat.completion, chat.completion.chunk), each
// carrying system_fingerprint and the seed in use. Invariant: the text of a
// stream's chunks concatenates to the text of the same non-streamed response,
// and token strings are valid UTF-8 (partial characters become U+FFFD; chat
// logprobs keep the exact bytes in "bytes").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/api_error.h"

namespace stet::server {

// The raw bytes a token id stands for (Tokenizer::TokenToPiece).
using PieceFn = std::function<std::string(int32_t)>;

struct ResponseMeta {
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
  std::string fingerprint;
  uint64_t seed = 0;
};

// One choice, accumulated from engine events.
struct ChoiceResult {
  std::string text;                     // generated text
  std::vector<TokenOut> tokens;         // generated tokens shown in logprobs (end markers excluded)
  std::vector<TokenOut> prompt_tokens;  // echo with logprobs: every prompt token (first unscored)
  FinishReason finish = FinishReason::kNone;
};

struct UsageCounts {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

Json UsageJson(const UsageCounts& u);
const char* FinishReasonText(FinishReason r);  // "stop" / "length" (cancelled/error as named)

// Completions' legacy logprobs object for `tokens`; text offsets start at `offset`.
// `first_unscored`: the first token has no logprob (null), as the first prompt token.
Json CompletionLogprobs(const std::vector<TokenOut>& tokens, bool first_unscored, size_t offset,
                        int top_n, const PieceFn& piece);
// Chat's {"content": [...], "refusal": null}.
Json ChatLogprobs(const std::vector<TokenOut>& tokens, int top_n, const PieceFn& piece);

// /v1/completions, non-streamed. `echo[i]` is the text prepended to choice i (empty without echo).
Json CompletionResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                        const std::vector<std::string>& echo, std::optional<int> logprobs,
                        const UsageCounts& usage, const PieceFn& piece);
// /v1/chat/completions, non-streamed.
Json ChatResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, bool logprobs,
                  int top_logprobs, const UsageCounts& usage, const PieceFn& piece);

// "data: <json>\n\n"
std::string SseEvent(const Json& j);
inline const char* SseDone() { return "data: [DONE]\n\n"; }

// SSE chunks of one /v1/completions stream.
class CompletionStream {
 public:
  CompletionStream(ResponseMeta meta, int n_choices, std::optional<int> logprobs,
                   bool include_usage, PieceFn piece);
  // The echoed prompt (and its logprobs), first chunk of a choice.
  std::string Echo(int index, const std::string& text, const std::vector<TokenOut>& prompt_tokens);
  // A generated token; `tok` null when it is not shown (end marker). "" when there is nothing to
  // send.
  std::string Token(int index, const std::string& text_delta, const TokenOut* tok);
  std::string Finish(int index, const std::string& text_delta, FinishReason why);
  std::string Usage(const UsageCounts& u);  // "" unless include_usage

 private:
  Json Chunk(int index, const std::string& text, Json logprobs, Json finish) const;
  ResponseMeta meta_;
  std::optional<int> logprobs_;
  bool include_usage_;
  PieceFn piece_;
  std::vector<size_t> offset_;  // bytes of text sent per choice
};

// SSE chunks of one /v1/chat/completions stream.
class ChatStream {
 public:
  ChatStream(ResponseMeta meta, bool logprobs, int top_logprobs, bool include_usage, PieceFn piece);
  std::string Start(int index);  // delta {"role": "assistant", "content": ""}
  std::string Token(int index, const std::string& text_delta, const TokenOut* tok);
  std::string Finish(int index, const std::string& text_delta, FinishReason why);
  std::string Usage(const UsageCounts& u);

 private:
  Json Chunk(int index, Json delta, Json logprobs, Json finish) const;
  ResponseMeta meta_;
  bool logprobs_;
  int top_logprobs_;
  bool include_usage_;
  PieceFn piece_;
};

}  // namespace stet::server
