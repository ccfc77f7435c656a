// The Responses API's response object, stream events and WireFormat.
#include "server/openai/responses_format.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "http/json_fields.h"
#include "wire/sse.h"

namespace stet::server {

namespace {

Json UsageObject(const UsageCounts& u, int64_t reasoning_tokens) {
  Json j = Json::object();
  j["input_tokens"] = u.prompt_tokens;
  // cache_write_tokens: the prefix cache keeps what it can on its own; nothing is written on
  // request.
  j["input_tokens_details"] = Json{{"cached_tokens", u.cached_tokens}, {"cache_write_tokens", 0}};
  j["output_tokens"] = u.completion_tokens;
  j["output_tokens_details"] = Json{{"reasoning_tokens", reasoning_tokens}};
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  return j;
}

std::string MessageId(const ResponseMeta& meta) {
  const std::string& id = meta.id;
  return "msg_" + (id.rfind("resp_", 0) == 0 ? id.substr(5) : id);
}

std::string ReasoningId(const ResponseMeta& meta) {
  const std::string& id = meta.id;
  return "rs_" + (id.rfind("resp_", 0) == 0 ? id.substr(5) : id);
}

Json ReasoningText(const std::string& text) {
  return Json{{"type", "reasoning_text"}, {"text", text}};
}

Json ReasoningItem(const ResponsesShape& s, const std::string* text, const char* status) {
  Json item = Json::object();
  item["id"] = ReasoningId(s.meta);
  item["type"] = "reasoning";
  item["summary"] = Json::array();
  item["content"] = text ? Json::array({ReasoningText(*text)}) : Json::array();
  item["status"] = status;
  return item;
}

Json TextPart(const ResponsesShape& s, const ChoiceResult& c, const PieceFn& piece) {
  Json part = Json::object();
  part["type"] = "output_text";
  part["text"] = c.text;
  part["annotations"] = Json::array();
  if (s.logprobs) part["logprobs"] = ChatLogprobs(c.tokens, s.top_logprobs, piece)["content"];
  return part;
}

Json MessageItem(const ResponsesShape& s, const ChoiceResult& c, const char* status,
                 const PieceFn& piece, bool with_part) {
  Json item = Json::object();
  item["id"] = MessageId(s.meta);
  item["type"] = "message";
  item["status"] = status;
  item["role"] = "assistant";
  item["content"] = with_part ? Json::array({TextPart(s, c, piece)}) : Json::array();
  return item;
}

// The response object; `output` and `usage` as far as they are known.
Json ResponseObject(const ResponsesShape& s, const char* status, Json output, Json usage,
                    Json incomplete) {
  Json j = Json::object();
  j["id"] = s.meta.id;
  j["object"] = "response";
  j["created_at"] = s.meta.created;
  j["status"] = status;
  j["background"] = false;
  j["error"] = nullptr;
  j["incomplete_details"] = std::move(incomplete);
  j["instructions"] = s.instructions;
  j["max_output_tokens"] = s.max_output_tokens;
  j["model"] = s.meta.model;
  j["output"] = std::move(output);
  j["parallel_tool_calls"] = s.parallel_tool_calls;
  j["previous_response_id"] = nullptr;
  j["reasoning"] = Json{{"effort", nullptr}, {"summary", nullptr}};
  j["store"] = false;
  j["temperature"] = s.temperature;
  j["text"] = Json{{"format", s.text_format}};
  j["tool_choice"] = s.tool_choice;
  j["tools"] = s.tools;
  j["top_logprobs"] = s.top_logprobs;
  j["top_p"] = s.top_p;
  j["truncation"] = "disabled";
  j["usage"] = std::move(usage);
  j["metadata"] = s.metadata;
  j["system_fingerprint"] = s.meta.fingerprint;
  j["seed"] = s.meta.seed;
  return j;
}

bool Incomplete(FinishReason why) { return why == FinishReason::kLength; }

// The answer's tool calls: none without parsing, or when the answer is not well-formed calls.
ParsedAnswer Calls(const ToolParseFn& parse, const ChoiceResult& c) {
  return parse ? parse(0, c) : ParsedAnswer{};
}

Json FinalResponse(const ResponsesShape& s, const ChoiceResult& c, const UsageCounts& u,
                   const PieceFn& piece, const ParsedAnswer& p) {
  Json output = Json::array();
  if (p.reasoning) output.push_back(ReasoningItem(s, &*p.reasoning, "completed"));
  if (!p.calls.empty()) {  // the text before the calls (if any) as a message, then the calls
    if (!p.content.empty()) {
      ChoiceResult text;
      text.text = p.content;
      output.push_back(MessageItem(s, text, "completed", piece, true));
    }
    for (const ToolCall& call : p.calls) output.push_back(FunctionCallItem(call, "completed"));
    return ResponseObject(s, "completed", std::move(output), UsageObject(u, p.reasoning_tokens),
                          nullptr);
  }
  const bool incomplete = Incomplete(c.finish);
  Json details = incomplete ? Json{{"reason", "max_output_tokens"}} : Json(nullptr);
  ChoiceResult message = c;
  if (p.reasoning) message.text = p.content;
  output.push_back(MessageItem(s, message, incomplete ? "incomplete" : "completed", piece, true));
  return ResponseObject(s, incomplete ? "incomplete" : "completed", std::move(output),
                        UsageObject(u, p.reasoning_tokens), std::move(details));
}

}  // namespace

ResponsesShape ResponsesShapeOf(ResponseMeta meta, const GenerationRequest& g) {
  ResponsesShape s;
  s.meta = std::move(meta);
  s.parallel_tool_calls = g.tools.parallel;
  s.logprobs = g.out.logprobs.has_value();
  s.metadata = Json::object();
  if (!g.echo.is_object()) return s;  // nothing echoed: the defaults
  const Json& e = g.echo;
  s.instructions = e.value("instructions", s.instructions);
  s.max_output_tokens = e.value("max_output_tokens", s.max_output_tokens);
  s.metadata = e.value("metadata", s.metadata);
  s.tool_choice = e.value("tool_choice", s.tool_choice);
  s.tools = e.value("tools", s.tools);
  s.text_format = e.value("text_format", s.text_format);
  s.temperature = e.value("temperature", s.temperature);
  s.top_p = e.value("top_p", s.top_p);
  s.top_logprobs = e.value("top_logprobs", s.top_logprobs);
  return s;
}

Json ResponsesBody(const ResponsesShape& shape, const ChoiceResult& choice,
                   const UsageCounts& usage, const PieceFn& piece, const ToolParseFn& parse) {
  return FinalResponse(shape, choice, usage, piece, Calls(parse, choice));
}

// ---------------------------------------------------------------------------

ResponsesStream::ResponsesStream(ResponsesShape shape, PieceFn piece)
    : shape_(std::move(shape)), piece_(std::move(piece)) {}

std::string ResponsesStream::Event(const char* type, Json data) {
  Json j = Json::object();
  j["type"] = type;
  j["sequence_number"] = seq_++;
  for (auto it = data.begin(); it != data.end(); ++it) j[it.key()] = std::move(it.value());
  return wire::SseTyped(type, Dump(j));
}

Json ResponsesStream::TextEvent(int output_index) const {
  Json j = Json::object();
  j["item_id"] = MessageId(shape_.meta);
  j["output_index"] = output_index;
  j["content_index"] = 0;
  return j;
}

std::string ResponsesStream::Start() {
  const Json pending = ResponseObject(shape_, "in_progress", Json::array(), nullptr, nullptr);
  std::string out = Event("response.created", Json{{"response", pending}});
  out += Event("response.in_progress", Json{{"response", pending}});
  // With parsing, items open as their parts become certain (Parts).
  return parse_ ? out : out + MessageStart(0);
}

std::string ResponsesStream::MessageStart(int output_index) {
  std::string out = Event("response.output_item.added",
                          Json{{"output_index", output_index},
                               {"item", MessageItem(shape_, {}, "in_progress", piece_, false)}});
  Json part = TextEvent(output_index);
  Json empty = Json::object();
  empty["type"] = "output_text";
  empty["text"] = "";
  empty["annotations"] = Json::array();
  part["part"] = std::move(empty);
  return out + Event("response.content_part.added", std::move(part));
}

std::string ResponsesStream::TextDelta(int output_index, const std::string& text, Json lps) {
  if (text.empty() && lps.empty()) return "";
  Json d = TextEvent(output_index);
  d["delta"] = text;
  d["logprobs"] = std::move(lps);
  return Event("response.output_text.delta", std::move(d));
}

std::string ResponsesStream::MessageEnd(int output_index, const ChoiceResult& c, bool incomplete) {
  Json text_done = TextEvent(output_index);
  text_done["text"] = c.text;
  text_done["logprobs"] = shape_.logprobs
                              ? ChatLogprobs(c.tokens, shape_.top_logprobs, piece_)["content"]
                              : Json::array();
  std::string out = Event("response.output_text.done", std::move(text_done));
  Json part_done = TextEvent(output_index);
  part_done["part"] = TextPart(shape_, c, piece_);
  out += Event("response.content_part.done", std::move(part_done));
  out += Event("response.output_item.done",
               Json{{"output_index", output_index},
                    {"item", MessageItem(shape_, c, incomplete ? "incomplete" : "completed", piece_,
                                         true)}});
  return out;
}

std::string ResponsesStream::CallEvents(int output_index, const ToolCall& call) {
  Json pending = FunctionCallItem(call, "in_progress");
  pending["arguments"] = "";
  std::string out = Event("response.output_item.added",
                          Json{{"output_index", output_index}, {"item", std::move(pending)}});
  Json ref = Json::object();
  ref["item_id"] = FunctionCallItemId(call);
  ref["output_index"] = output_index;
  for (const std::string& piece : ArgumentPieces(call.arguments)) {
    Json delta = ref;
    delta["delta"] = piece;
    out += Event("response.function_call_arguments.delta", std::move(delta));
  }
  Json done = ref;
  done["arguments"] = call.arguments;
  out += Event("response.function_call_arguments.done", std::move(done));
  out += Event("response.output_item.done",
               Json{{"output_index", output_index}, {"item", FunctionCallItem(call, "completed")}});
  return out;
}

std::string ResponsesStream::Token(const std::string& text_delta, const TokenOut* tok,
                                   const ChoiceResult& folded) {
  if (parse_) return Parts(safe_ ? safe_(folded) : SafeParts{}, /*reasoning_done=*/false);
  Json lps = Json::array();
  if (shape_.logprobs && tok) lps = ChatLogprobs({*tok}, shape_.top_logprobs, piece_)["content"];
  return TextDelta(0, text_delta, std::move(lps));
}

std::string ResponsesStream::Finish(const std::string& text_delta, const ChoiceResult& folded) {
  if (parse_) return "";  // the rest goes out with the parsed answer (Done)
  return text_delta.empty() ? "" : Token(text_delta, nullptr, folded);
}

std::string ResponsesStream::ReasoningStart() {
  reasoning_index_ = next_output_++;
  std::string out = Event("response.output_item.added",
                          Json{{"output_index", reasoning_index_},
                               {"item", ReasoningItem(shape_, nullptr, "in_progress")}});
  Json part = TextEvent(reasoning_index_);
  part["item_id"] = ReasoningId(shape_.meta);
  part["part"] = ReasoningText("");
  return out + Event("response.content_part.added", std::move(part));
}

std::string ResponsesStream::ReasoningEnd(const std::string& text) {
  reasoning_closed_ = true;
  Json ref = TextEvent(reasoning_index_);
  ref["item_id"] = ReasoningId(shape_.meta);
  Json done = ref;
  done["text"] = text;
  std::string out = Event("response.reasoning_text.done", std::move(done));
  Json part = ref;
  part["part"] = ReasoningText(text);
  out += Event("response.content_part.done", std::move(part));
  return out + Event("response.output_item.done",
                     Json{{"output_index", reasoning_index_},
                          {"item", ReasoningItem(shape_, &text, "completed")}});
}

std::string ResponsesStream::Parts(const SafeParts& parts, bool reasoning_done) {
  std::string out;
  const bool content = parts.content.size() > sent_content_;
  if (parts.block && reasoning_index_ < 0 &&
      (!parts.reasoning.empty() || content || reasoning_done))
    out += ReasoningStart();  // the block's item goes first, even when it is empty
  if (parts.reasoning.size() > sent_reasoning_) {
    Json d = TextEvent(reasoning_index_);
    d["item_id"] = ReasoningId(shape_.meta);
    d["delta"] = parts.reasoning.substr(sent_reasoning_);
    out += Event("response.reasoning_text.delta", std::move(d));
    sent_reasoning_ = parts.reasoning.size();
  }
  // Content starts after the block's end: the reasoning is whole by then.
  if (reasoning_index_ >= 0 && !reasoning_closed_ && (content || reasoning_done))
    out += ReasoningEnd(parts.reasoning);
  if (!content) return out;
  if (message_index_ < 0) {
    message_index_ = next_output_++;
    out += MessageStart(message_index_);
  }
  out += TextDelta(message_index_, parts.content.substr(sent_content_), Json::array());
  sent_content_ = parts.content.size();
  return out;
}

std::string ResponsesStream::Done(const UsageCounts& usage, const ChoiceResult& c) {
  const ParsedAnswer p = Calls(parse_, c);
  const bool incomplete = p.calls.empty() && Incomplete(c.finish);
  std::string out;
  // One statement per event: each takes the next sequence_number.
  if (!parse_) {
    out = MessageEnd(0, c, incomplete);
    return out + Event(incomplete ? "response.incomplete" : "response.completed",
                       Json{{"response", FinalResponse(shape_, c, usage, piece_, p)}});
  }
  out = Parts({p.reasoning.value_or(""), p.content, p.reasoning.has_value()},
              /*reasoning_done=*/true);
  if (p.calls.empty() || !p.content.empty()) {
    ChoiceResult message;
    message.text = p.content;
    if (p.calls.empty()) message.tokens = c.tokens;  // the message's logprobs, as the body's
    if (message_index_ < 0) {
      message_index_ = next_output_++;
      out += MessageStart(message_index_);
    }
    out += MessageEnd(message_index_, message, incomplete);
  }
  for (const ToolCall& call : p.calls) out += CallEvents(next_output_++, call);
  out += Event(incomplete ? "response.incomplete" : "response.completed",
               Json{{"response", FinalResponse(shape_, c, usage, piece_, p)}});
  return out;
}

// ---------------------------------------------------------------------------

ResponsesFormat::ResponsesFormat(FormatContext c, const GenerationRequest& g)
    : c_(std::move(c)), shape_(ResponsesShapeOf(c_.meta, g)), stream_(shape_, c_.piece) {
  if (c_.tools) stream_.SetAnswerParsing(c_.tools, c_.safe);
}

Json ResponsesFormat::Body(const std::vector<ChoiceResult>& choices, const UsageCounts& usage) {
  Json j = ResponsesBody(shape_, choices.at(0), usage, c_.piece, c_.tools);
  if (c_.out.return_token_ids) {
    j["prompt_token_ids"] = c_.prompt_ids.empty() ? std::vector<int32_t>() : c_.prompt_ids[0];
    Json ids = Json::array();
    for (const TokenOut& t : choices.at(0).tokens) ids.push_back(t.id);
    j["token_ids"] = std::move(ids);
  }
  return j;
}

}  // namespace stet::server
