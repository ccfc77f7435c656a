// /v1/chat/completions' answer: the chat.completion body (message, tool
// calls, logprobs, token ids) and its chat.completion.chunk stream, behind
// WireFormat. Invariant: a stream's content deltas concatenate to the body's
// content and its tool-call deltas merge (by index) into the body's calls.
#pragma once

#include <string>
#include <vector>

#include "server/openai/wire_format.h"

namespace stet::server {

// The body. With `tools`, an answer holding tool calls has them in
// message.tool_calls, what precedes them as content (null when nothing does)
// and finish_reason "tool_calls".
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
  // Tool calls: a choice's text is held back until it is finished and parsed;
  // then its calls go out as tool_calls deltas (one chunk per call, by
  // "index"), or its text as one content chunk when it holds none.
  void SetToolParsing(ToolParseFn parse) { parse_ = std::move(parse); }

 private:
  Json Chunk(int index, Json delta, Json logprobs, Json finish,
             const std::vector<TokenOut>& toks = {}) const;
  std::string FinishHeld(int index, const ChoiceResult& folded);
  ResponseMeta meta_;
  bool logprobs_;
  int top_logprobs_;
  bool include_usage_;
  PieceFn piece_;
  bool token_ids_ = false;
  std::vector<int32_t> prompt_;
  ToolParseFn parse_;
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
