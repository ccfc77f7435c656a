// /v1/responses' answer: the response object and the typed SSE events of a
// stream (response.created … response.output_text.delta …
// response.completed), behind WireFormat. Function-call items:
// responses_tools.h; reasoning items hold a reasoning block. Invariant: a
// stream's deltas concatenate to its items' texts, and its final event
// carries the non-streamed response object.
#pragma once

#include <string>
#include <vector>

#include "server/openai/responses_tools.h"
#include "server/openai/wire_format.h"

namespace stet::server {

// What the response object echoes of its request, and how it reports tokens.
struct ResponsesShape {
  ResponseMeta meta;  // id "resp_...", created_at, model, fingerprint, seed
  Json instructions = nullptr;
  Json max_output_tokens = nullptr;
  Json metadata;  // the request's, or {}
  Json tool_choice = "auto";
  Json tools = Json::array();  // the request's, as given
  bool parallel_tool_calls = true;
  Json text_format = Json{{"type", "text"}};  // text.format as the request gave it
  Json temperature = 1.0;
  Json top_p = 1.0;
  bool logprobs = false;  // include: ["message.output_text.logprobs"]
  int top_logprobs = 0;
};

// The shape of a parsed Responses request (ParseResponsesRequest's `echo`).
ResponsesShape ResponsesShapeOf(ResponseMeta meta, const GenerationRequest& g);

// The response object: status "completed", or "incomplete" (reason
// max_output_tokens) when generation ended on its length. With `parse` (tools
// given, tool_choice not "none"), an answer that is well-formed calls is
// function_call items (after a message with the text before them, if any);
// a reasoning block is a reasoning item before them, its tokens counted in
// usage.output_tokens_details.reasoning_tokens.
Json ResponsesBody(const ResponsesShape& shape, const ChoiceResult& choice,
                   const UsageCounts& usage, const PieceFn& piece,
                   const ToolParseFn& parse = nullptr);

// The events of one streamed response, each "event: <type>\ndata: <json>\n\n"
// with a sequence_number counting from 0. `folded`: the choice as the
// collector folded it.
class ResponsesStream {
 public:
  ResponsesStream(ResponsesShape shape, PieceFn piece);
  // Tool calls and reasoning: each token sends what `safe` says is certain
  // (a reasoning item's reasoning_text.delta, the message's
  // output_text.delta; nothing without `safe`); at the end the rest, then the
  // function_call items (output_item.added, function_call_arguments.delta in
  // pieces, .done, output_item.done per call).
  void SetAnswerParsing(ToolParseFn parse, SafePartsFn safe) {
    parse_ = std::move(parse);
    safe_ = std::move(safe);
  }
  // response.created, response.in_progress, then (without tool parsing)
  // output_item.added and content_part.added
  std::string Start();
  // response.output_text.delta ("" when the token releases no text and no logprobs are asked)
  std::string Token(const std::string& text_delta, const TokenOut* tok, const ChoiceResult& folded);
  // The last text, if any.
  std::string Finish(const std::string& text_delta, const ChoiceResult& folded);
  // output_text.done, content_part.done, output_item.done (parsed: the rest
  // of each item, then the calls), then response.completed (or response.incomplete) carrying the
  // full response.
  std::string Done(const UsageCounts& usage, const ChoiceResult& folded);

 private:
  std::string Event(const char* type, Json data);
  Json TextEvent(int output_index) const;  // item_id, output_index, content_index
  std::string MessageStart(int output_index);
  std::string TextDelta(int output_index, const std::string& text, Json lps);
  std::string MessageEnd(int output_index, const ChoiceResult& c, bool incomplete);
  std::string CallEvents(int output_index, const ToolCall& call);
  // Parsed answers: the parts past what went out, opening and closing items.
  std::string Parts(const SafeParts& parts, bool reasoning_done);
  std::string ReasoningStart();
  std::string ReasoningEnd(const std::string& text);
  ResponsesShape shape_;
  PieceFn piece_;
  ToolParseFn parse_;
  SafePartsFn safe_;
  int seq_ = 0;
  // Parsed answers: the items opened so far (-1: none) and what they carry.
  int next_output_ = 0, reasoning_index_ = -1, message_index_ = -1;
  bool reasoning_closed_ = false;
  size_t sent_reasoning_ = 0, sent_content_ = 0;
};

class ResponsesFormat final : public WireFormat {
 public:
  ResponsesFormat(FormatContext c, const GenerationRequest& g);
  Json Body(const std::vector<ChoiceResult>& choices, const UsageCounts& usage) override;
  std::string Begin() override { return stream_.Start(); }
  std::string End(const std::vector<ChoiceResult>& choices, const UsageCounts& usage) override {
    return stream_.Done(usage, choices.at(0));
  }
  bool done_marker() const override { return false; }  // it ends with response.completed

 protected:
  std::string Token(const StreamStep& s) override {
    return stream_.Token(s.ev.text_delta, s.shown, s.choice);
  }
  std::string Finished(const StreamStep& s) override {
    return stream_.Finish(s.ev.text_delta, s.choice);
  }

 private:
  FormatContext c_;
  ResponsesShape shape_;
  ResponsesStream stream_;
};

}  // namespace stet::server
