// /v1/chat/completions' answer: the chat.completion body (message, reasoning,
// tool calls, logprobs, token ids) and its chat.completion.chunk stream,
// behind WireFormat. Invariant: a stream's content and reasoning_content
// deltas concatenate to the body's and its tool-call deltas merge (by index)
// into the body's calls, byte for byte.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/openai/wire_format.h"

namespace stet::server {

// The body. With `tools`, an answer holding tool calls has them in
// message.tool_calls, what precedes them as content (null when nothing does)
// and finish_reason "tool_calls"; a reasoning block is reasoning_content.
Json ChatResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, bool logprobs,
                  int top_logprobs, const UsageCounts& usage, const PieceFn& piece,
                  const ToolParseFn& tools = nullptr);

// SSE chunks of one /v1/chat/completions stream. `folded` is the choice so
// far as the collector folded it (this event included).
class ChatStream {
 public:
  ChatStream(ResponseMeta meta, bool logprobs, int top_logprobs, bool include_usage, PieceFn piece);
  std::string Start(int index);  // delta {"role": "assistant", "content": ""}
  std::string Token(int index, const std::string& text_delta, const TokenOut* tok,
                    const ChoiceResult& folded);
  std::string Finish(int index, const std::string& text_delta, FinishReason why,
                     const ChoiceResult& folded);
  std::string Usage(const UsageCounts& u);
  // return_token_ids: each Start chunk carries the prompt's "prompt_token_ids"
  // (top level, as the non-streamed response), every other chunk's choice "token_ids".
  void SetTokenIds(std::vector<int32_t> prompt) {
    token_ids_ = true;
    prompt_ = std::move(prompt);
  }
  // Tool calls and reasoning: each token sends what `safe` says is certain
  // (reasoning_content, content; nothing without `safe`); when the choice is
  // finished and parsed, the rest of its reasoning and content, then each
  // call — a delta with its index, id, type and name (arguments ""), then its
  // arguments in pieces — and finish_reason "tool_calls".
  void SetAnswerParsing(ToolParseFn parse, SafePartsFn safe) {
    parse_ = std::move(parse);
    safe_ = std::move(safe);
  }

 private:
  Json Chunk(int index, Json delta, Json logprobs, Json finish,
             const std::vector<TokenOut>& toks = {}) const;
  std::string TokenParsed(int index, const TokenOut* tok, const ChoiceResult& folded);
  std::string FinishParsed(int index, const ChoiceResult& folded);
  // What of a choice's parts went out.
  struct Sent {
    size_t reasoning = 0, content = 0;
  };
  // The delta that carries `parts` past what was sent, and marks them sent.
  Json PartsDelta(int index, const SafeParts& parts);
  ResponseMeta meta_;
  bool logprobs_;
  int top_logprobs_;
  bool include_usage_;
  PieceFn piece_;
  bool token_ids_ = false;
  std::vector<int32_t> prompt_;
  ToolParseFn parse_;
  SafePartsFn safe_;
  std::map<int, Sent> sent_;
  std::optional<int64_t> reasoning_tokens_;  // summed over the finished choices that had a block
};

class ChatFormat final : public WireFormat {
 public:
  explicit ChatFormat(FormatContext c);
  Json Body(const std::vector<ChoiceResult>& choices, const UsageCounts& usage) override;
  std::string Begin() override;  // each choice's role chunk
  std::string End(const std::vector<ChoiceResult>&, const UsageCounts& usage) override {
    return stream_.Usage(usage);
  }

 protected:
  std::string Token(const StreamStep& s) override;
  std::string Finished(const StreamStep& s) override;

 private:
  FormatContext c_;
  ChatStream stream_;
};

}  // namespace stet::server
