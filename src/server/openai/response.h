// What every wire shape's answer is made of: a choice as the collector folds
// it, usage, the response header (id, object, created, model,
// system_fingerprint and the seed in use), logprobs in the completions and
// chat shapes, vLLM's prompt_logprobs, and SSE framing. The shapes
// themselves: completions_format.h, chat_format.h, responses_format.h, one
// WireFormat each (wire_format.h). Invariant: token strings are valid UTF-8
// (partial characters become U+FFFD; chat logprobs keep the exact bytes in
// "bytes").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "http/api_error.h"
#include "server/structured/answer_split.h"
#include "wire/sse.h"

namespace stet::server {

// The raw bytes a token id stands for (Tokenizer::TokenToPiece).
using PieceFn = std::function<std::string(int32_t)>;

struct ResponseMeta {
  std::string id;       // "cmpl-..." / "chatcmpl-..." / "resp_..."
  int64_t created = 0;  // Unix seconds
  std::string model;
  std::string fingerprint;
  uint64_t seed = 0;
};

// One choice, folded from engine events once, by the collector (server/job.h).
struct ChoiceResult {
  std::string text;                     // generated text
  std::vector<TokenOut> tokens;         // generated tokens shown in logprobs (end markers excluded)
  std::vector<TokenOut> prompt_tokens;  // echo with logprobs: every prompt token (first unscored)
  FinishReason finish = FinishReason::kNone;
  // When the request reads tool calls: the pieces of `tokens` with special
  // tokens written out, where a tool-call format's markers (<|python_tag|>,
  // [TOOL_CALLS]: control tokens that `text` leaves out) are found.
  std::string raw;
};

struct UsageCounts {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  // Chat: the completion tokens inside reasoning blocks, set when an answer's
  // reasoning was split out (usage.completion_tokens_details.reasoning_tokens).
  std::optional<int64_t> reasoning_tokens;
};

// The parts of choice `index`'s answer: its reasoning block, tool calls
// (none: its text stays the content) — server/structured/answer_split.h.
using ToolParseFn = std::function<ParsedAnswer(int index, const ChoiceResult& choice)>;
// The parts of a choice's answer that are certain so far, while it streams.
using SafePartsFn = std::function<SafeParts(const ChoiceResult& choice)>;

// A call's arguments (compact JSON) in the pieces a stream sends them in, as
// OpenAI streams them: cut after each ':' and ',' outside strings.
std::vector<std::string> ArgumentPieces(const std::string& json);

Json UsageJson(const UsageCounts& u);
const char* FinishReasonText(FinishReason r);  // "stop" / "length" (cancelled/error as named)

// {"id", "object", "created", "model", "system_fingerprint", "seed"}: the head
// of a completion, chat completion or chunk.
Json ResponseHeader(const ResponseMeta& meta, const char* object);
// A stream's closing usage chunk (stream_options.include_usage): the head, no choices,
// the usage.
Json UsageChunk(const ResponseMeta& meta, const char* object, const UsageCounts& u);

// Completions' legacy logprobs object for `tokens`; text offsets start at `offset`.
// `first_unscored`: the first token has no logprob (null), as the first prompt token.
Json CompletionLogprobs(const std::vector<TokenOut>& tokens, bool first_unscored, size_t offset,
                        int top_n, const PieceFn& piece);
// Chat's {"content": [...], "refusal": null}.
Json ChatLogprobs(const std::vector<TokenOut>& tokens, int top_n, const PieceFn& piece);

// vLLM's prompt_logprobs list: null for the first token, then per token a dict
// {"<id>": {"logprob", "rank", "decoded_token"}} of the prompt token and its
// `k` best alternatives (rank 1-based; null where the token is not among them).
Json PromptLogprobsJson(const std::vector<TokenOut>& prompt_tokens, int k, const PieceFn& piece);

// Adds "token_ids" (and "prompt_token_ids") to a non-streamed response body,
// as vLLM's return_token_ids does: per choice for /v1/completions; the chat
// prompt's ids at the top level.
void AddTokenIds(Json* response, const std::vector<ChoiceResult>& choices,
                 const std::vector<std::vector<int32_t>>& prompts, int n, bool chat);

// "data: <json>\n\n" (wire::SseData), and the stream's end (wire::kSseDone).
std::string SseEvent(const Json& j);
inline const char* SseDone() { return wire::kSseDone; }

}  // namespace stet::server
