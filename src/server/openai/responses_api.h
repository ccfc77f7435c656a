// POST /v1/responses, OpenAI's Responses API over the chat template: the
// request (input as a string or message items, instructions,
// max_output_tokens, sampling, include message.output_text.logprobs), the
// response object, and the typed SSE events of a stream (response.created …
// response.output_text.delta … response.completed). Function tools and
// function-call items: server/openai/responses_tools.h. Stateless: what needs
// stored responses is a 400; text.format
// json_object / json_schema constrain the output (server/structured/structured_output.h). Others
// are a 400 naming the field. Invariant: a stream's deltas concatenate to the text, and its final
// response object is the non-streamed one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "http/api_error.h"
#include "server/openai/request_parse.h"
#include "server/openai/response.h"
#include "server/openai/responses_tools.h"

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

struct ResponsesRequest {
  Json messages;  // chat messages for the template: instructions first (as system)
  CommonFields s;
  ResponsesTools tools;  // chat-shaped tools for the template, tool_choice, parallel_tool_calls
  ResponsesShape shape;
};

ApiOr<ResponsesRequest> ParseResponsesRequest(const Json& body, const ServedModel& model);

// The response object: status "completed", or "incomplete" (reason
// max_output_tokens) when generation ended on its length. With `parse` (tools
// given, tool_choice not "none"), an answer that is well-formed calls is
// function_call items (after a message with the text before them, if any).
Json ResponsesBody(const ResponsesShape& shape, const ChoiceResult& choice,
                   const UsageCounts& usage, const PieceFn& piece,
                   const ToolParseFn& parse = nullptr);

// The events of one streamed response, each "event: <type>\ndata: <json>\n\n"
// with a sequence_number counting from 0.
class ResponsesStream {
 public:
  ResponsesStream(ResponsesShape shape, PieceFn piece);
  // Tool calls: the answer is held back until it is finished and parsed; then
  // either its message (one output_text.delta) or its function_call items
  // (output_item.added, function_call_arguments.delta / .done,
  // output_item.done per call) go out.
  void SetToolParsing(ToolParseFn parse) { parse_ = std::move(parse); }
  // response.created, response.in_progress, then (without tool parsing)
  // output_item.added and content_part.added
  std::string Start();
  // response.output_text.delta ("" when the token releases no text and no logprobs are asked)
  std::string Token(const std::string& text_delta, const TokenOut* tok);
  // The last text, if any; remembers why generation ended.
  std::string Finish(const std::string& text_delta, FinishReason why);
  // output_text.done, content_part.done, output_item.done (or the held-back
  // items), then response.completed (or response.incomplete) carrying the full response.
  std::string Done(const UsageCounts& usage);

 private:
  std::string Event(const char* type, Json data);
  Json TextEvent(int output_index) const;  // item_id, output_index, content_index
  std::string MessageStart(int output_index);
  std::string TextDelta(int output_index, const std::string& text, Json lps);
  std::string MessageEnd(int output_index, const ChoiceResult& c, bool incomplete);
  std::string CallEvents(int output_index, const ToolCall& call);
  ResponsesShape shape_;
  PieceFn piece_;
  ToolParseFn parse_;
  int seq_ = 0;
  ChoiceResult acc_;
};

}  // namespace stet::server
