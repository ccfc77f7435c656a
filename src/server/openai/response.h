// Response bodies and SSE chunks of the completion endpoints, in OpenAI's
// shapes (text_completion, chat.completion, chat.completion.chunk), each
// carrying system_fingerprint and the seed in use. Invariant: the text of a
// stream's chunks concatenates to the text of the same non-streamed response,
// and token strings are valid UTF-8 (partial characters become U+FFFD; chat
// logprobs keep the exact bytes in "bytes").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "http/api_error.h"
#include "server/structured/tool_calls.h"

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

// vLLM's prompt_logprobs list: null for the first token, then per token a dict
// {"<id>": {"logprob", "rank", "decoded_token"}} of the prompt token and its
// `k` best alternatives (rank 1-based; null where the token is not among them).
Json PromptLogprobsJson(const std::vector<TokenOut>& prompt_tokens, int k, const PieceFn& piece);

// /v1/completions, non-streamed. `echo[i]` is the text prepended to choice i (empty without echo).
Json CompletionResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                        const std::vector<std::string>& echo, std::optional<int> logprobs,
                        const UsageCounts& usage, const PieceFn& piece);
// The tool calls in choice `index`'s answer (none: its text stays the content).
using ToolParseFn = std::function<ParsedAnswer(int index, const ChoiceResult& choice)>;

// /v1/chat/completions, non-streamed. With `tools`, an answer holding tool
// calls has them in message.tool_calls, what precedes them as content (null
// when nothing does) and finish_reason "tool_calls".
Json ChatResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, bool logprobs,
                  int top_logprobs, const UsageCounts& usage, const PieceFn& piece,
                  const ToolParseFn& tools = nullptr);

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
  // Without echo: a chunk with no text carrying the prompt's prompt_logprobs.
  std::string PromptScores(int index, const std::vector<TokenOut>& prompt_tokens);

  // return_token_ids: every chunk's choice carries "token_ids" (the ids its
  // text came from), a choice's first chunk "prompt_token_ids" (`prompts[i / n]`).
  void SetTokenIds(std::vector<std::vector<int32_t>> prompts, int n);
  // prompt_logprobs: k: the echo chunk (or PromptScores) carries "prompt_logprobs".
  void SetPromptLogprobs(int k) { prompt_logprobs_ = k; }

 private:
  Json Chunk(int index, const std::string& text, Json logprobs, Json finish,
             const TokenOut* tok = nullptr);
  ResponseMeta meta_;
  std::optional<int> logprobs_;
  bool include_usage_;
  PieceFn piece_;
  std::vector<size_t> offset_;  // bytes of text sent per choice
  std::optional<int> prompt_logprobs_;
  bool token_ids_ = false;
  std::vector<std::vector<int32_t>> prompts_;
  int n_ = 1;
  std::vector<bool> prompt_sent_;  // per choice: prompt_token_ids sent
};

// SSE chunks of one /v1/chat/completions stream.
class ChatStream {
 public:
  ChatStream(ResponseMeta meta, bool logprobs, int top_logprobs, bool include_usage, PieceFn piece);
  std::string Start(int index);  // delta {"role": "assistant", "content": ""}
  std::string Token(int index, const std::string& text_delta, const TokenOut* tok);
  std::string Finish(int index, const std::string& text_delta, FinishReason why);
  std::string Usage(const UsageCounts& u);
  // return_token_ids: each Start chunk carries the prompt's "prompt_token_ids"
  // (top level, as the non-streamed response), every other chunk's choice "token_ids".
  void SetTokenIds(std::vector<int32_t> prompt) {
    token_ids_ = true;
    prompt_ = std::move(prompt);
  }
  // Tool calls: a choice's text is held back until it is finished and parsed;
  // then its calls go out as tool_calls deltas (one chunk per call, by
  // "index"), or its text as one content chunk when it holds none.
  void SetToolParsing(ToolParseFn parse) { parse_ = std::move(parse); }

 private:
  Json Chunk(int index, Json delta, Json logprobs, Json finish,
             const std::vector<TokenOut>& toks = {}) const;
  std::string FinishHeld(int index, const std::string& text_delta, FinishReason why);
  ResponseMeta meta_;
  bool logprobs_;
  int top_logprobs_;
  bool include_usage_;
  PieceFn piece_;
  bool token_ids_ = false;
  std::vector<int32_t> prompt_;
  ToolParseFn parse_;
  std::map<int, ChoiceResult> held_;  // with parse_: per choice, what is held back
};

}  // namespace stet::server
