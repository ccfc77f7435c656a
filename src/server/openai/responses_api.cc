// The Responses API's request parsing, response object and stream events.
// Input items become chat messages (the same normalization as
// /v1/chat/completions), so a Responses request and the equivalent chat
// request render the same prompt and, with the same seed, give the same text.
#include "server/openai/responses_api.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "http/api_error.h"
#include "http/json_fields.h"
#include "server/openai/responses_tools.h"
#include "server/structured/structured_output.h"

namespace stet::server {

namespace {

constexpr const char* kLogprobsInclude = "message.output_text.logprobs";

bool Present(const Json& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

// One input item's text: a string, or input_text / output_text parts joined by "\n".
std::optional<ApiError> ItemContent(const Json& content, const std::string& param,
                                    std::string* out) {
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array())
    return BadRequest("'" + param + "' must be a string or an array of content parts", param);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string pp = param + "[" + std::to_string(i) + "]";
    const Json type = part.is_object() ? part.value("type", Json()) : Json();
    if (type != "input_text" && type != "output_text" && type != "text") {
      return BadRequest(
          "'" + pp + ".type' must be input_text or output_text (this server takes text only)",
          pp + ".type");
    }
    auto t = part.find("text");
    if (t == part.end() || !t->is_string())
      return BadRequest("'" + pp + ".text' must be a string", pp + ".text");
    if (i > 0) text += "\n";
    text += t->get<std::string>();
  }
  *out = std::move(text);
  return std::nullopt;
}

// input: a string (one user message) or message items -> chat messages.
std::optional<ApiError> ReadInput(const Json& body, Json* messages) {
  auto in = body.find("input");
  if (in == body.end() || in->is_null())
    return BadRequest("You must provide an input parameter.", "input");
  if (in->is_string()) {
    messages->push_back(Json{{"role", "user"}, {"content", in->get<std::string>()}});
    return std::nullopt;
  }
  if (!in->is_array() || in->empty())
    return BadRequest("'input' must be a string or a non-empty array of message items", "input");
  CallNames names;
  for (size_t i = 0; i < in->size(); ++i) {
    const Json& item = (*in)[i];
    const std::string ip = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) return BadRequest("'" + ip + "' must be an object", ip);
    const Json type = item.value("type", Json("message"));
    if (type == "function_call" || type == "function_call_output") {
      STET_API_TRY(AppendToolItem(item, ip, messages, &names));
      continue;
    }
    if (type != "message") {
      return BadRequest("'" + ip + ".type' is " + Dump(type) +
                            "; this server takes message, function_call and function_call_output "
                            "items",
                        ip + ".type");
    }
    const Json role = item.value("role", Json());
    if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
      return BadRequest("'" + ip + ".role' must be user, assistant, system or developer",
                        ip + ".role");
    }
    auto c = item.find("content");
    if (c == item.end() || c->is_null())
      return BadRequest("'" + ip + ".content' is required", ip + ".content");
    std::string text;
    STET_API_TRY(ItemContent(*c, ip + ".content", &text));
    messages->push_back(Json{{"role", role}, {"content", std::move(text)}});
  }
  return std::nullopt;
}

// What needs stored state or features stet lacks yet: a 400 naming the field.
std::optional<ApiError> RefuseUnsupported(const Json& body) {
  if (Present(body, "previous_response_id"))
    return BadRequest(
        "'previous_response_id' is not supported: this server stores no responses (send the "
        "whole conversation as input)",
        "previous_response_id");
  if (Present(body, "conversation"))
    return BadRequest("'conversation' is not supported: this server stores no conversations",
                      "conversation");
  for (const char* key : {"store", "background"}) {
    bool v = false;
    STET_API_TRY(ReadBool(body, key, &v));
    if (v)
      return BadRequest(
          std::string("'") + key + "': true is not supported: this server stores no responses",
          key);
  }
  return std::nullopt;
}

std::optional<ApiError> ReadInclude(const Json& body, ResponsesShape* shape) {
  auto inc = body.find("include");
  if (inc == body.end() || inc->is_null()) return std::nullopt;
  if (!inc->is_array()) return BadRequest("'include' must be an array of strings", "include");
  for (const Json& v : *inc) {
    if (v != kLogprobsInclude)
      return BadRequest("'include' supports only \"message.output_text.logprobs\", not " + Dump(v),
                        "include");
    shape->logprobs = true;
  }
  return std::nullopt;
}

std::optional<ApiError> ReadModelName(const Json& body, const ServedModel& served) {
  auto it = body.find("model");
  if (it == body.end() || it->is_null())
    return BadRequest("You must provide a model parameter.", "model");
  if (!it->is_string())
    return BadRequest(std::string("'model' must be a string, not ") + TypeName(*it), "model");
  if (!served.Matches(it->get<std::string>())) return ModelNotFound(it->get<std::string>());
  return std::nullopt;
}

Json UsageObject(const UsageCounts& u) {
  Json j = Json::object();
  j["input_tokens"] = u.prompt_tokens;
  j["input_tokens_details"] = Json{{"cached_tokens", u.cached_tokens}};
  j["output_tokens"] = u.completion_tokens;
  j["output_tokens_details"] = Json{{"reasoning_tokens", 0}};
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  return j;
}

std::string MessageId(const ResponseMeta& meta) {
  const std::string& id = meta.id;
  return "msg_" + (id.rfind("resp_", 0) == 0 ? id.substr(5) : id);
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
  if (!p.calls.empty()) {  // the text before the calls (if any) as a message, then the calls
    Json output = Json::array();
    if (!p.content.empty()) {
      ChoiceResult text;
      text.text = p.content;
      output.push_back(MessageItem(s, text, "completed", piece, true));
    }
    for (const ToolCall& call : p.calls) output.push_back(FunctionCallItem(call, "completed"));
    return ResponseObject(s, "completed", std::move(output), UsageObject(u), nullptr);
  }
  const bool incomplete = Incomplete(c.finish);
  Json details = incomplete ? Json{{"reason", "max_output_tokens"}} : Json(nullptr);
  Json output =
      Json::array({MessageItem(s, c, incomplete ? "incomplete" : "completed", piece, true)});
  return ResponseObject(s, incomplete ? "incomplete" : "completed", std::move(output),
                        UsageObject(u), std::move(details));
}

}  // namespace

ApiOr<ResponsesRequest> ParseResponsesRequest(const Json& body, const ServedModel& model) {
  ResponsesRequest r;
  STET_API_TRY(ReadModelName(body, model));
  STET_API_TRY(RefuseUnsupported(body));
  Json messages = Json::array();
  auto instr = body.find("instructions");
  if (instr != body.end() && !instr->is_null()) {
    if (!instr->is_string()) return BadRequest("'instructions' must be a string", "instructions");
    messages.push_back(Json{{"role", "system"}, {"content", *instr}});
    r.shape.instructions = *instr;
  }
  STET_API_TRY(ReadInput(body, &messages));
  // The chat parser's normalization (and its checks) on the messages built from the input.
  STET_API_TRY(ParseMessages(Json{{"messages", std::move(messages)}}, &r.messages));
  STET_API_TRY(ParseSampling(body, &r.s.params.sampling));
  STET_API_TRY(ReadBool(body, "ignore_eos", &r.s.params.ignore_eos));
  STET_API_TRY(ReadBool(body, "stream", &r.s.stream));
  if (Present(body, "max_output_tokens")) {
    int v = 0;
    STET_API_TRY(ReadInt(body, "max_output_tokens", 1, std::numeric_limits<int32_t>::max(), &v));
    r.s.max_tokens = v;
    r.shape.max_output_tokens = v;
  }
  auto text = body.find("text");  // text.format: structured outputs (a grammar on the request)
  if (text != body.end() && !text->is_null()) {
    if (!text->is_object()) return BadRequest("'text' must be an object", "text");
    auto fmt = text->find("format");
    if (fmt != text->end() && !fmt->is_null()) {
      STET_API_TRY(ReadTextFormat(*fmt, "text.format", &r.s.params));
      r.shape.text_format = *fmt;
    }
  }
  STET_API_TRY(ReadInclude(body, &r.shape));
  STET_API_TRY(ReadInt(body, "top_logprobs", &r.shape.top_logprobs));  // 0..20: the engine's check
  if (r.shape.logprobs) r.s.params.top_logprobs = r.shape.top_logprobs;
  if (Present(body, "temperature")) r.shape.temperature = body["temperature"];
  if (Present(body, "top_p")) r.shape.top_p = body["top_p"];
  STET_API_TRY(ReadResponsesTools(body, &r.tools));
  r.shape.tool_choice = r.tools.tool_choice;
  r.shape.tools = r.tools.echo;
  r.shape.parallel_tool_calls = r.tools.parallel;
  if (!r.tools.forced.empty() && r.s.params.grammar)
    return BadRequest("a forced 'tool_choice' cannot be combined with a JSON 'text.format'",
                      "tool_choice");
  auto md = body.find("metadata");
  r.shape.metadata = md != body.end() && md->is_object() ? *md : Json::object();
  return r;
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
  return std::string("event: ") + type + "\ndata: " + Dump(j) + "\n\n";
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
  // With tool parsing the answer is held back: its items are known at the end.
  return parse_ ? out : out + MessageStart(0);
}

std::string ResponsesStream::MessageStart(int output_index) {
  std::string out = Event("response.output_item.added",
                          Json{{"output_index", output_index},
                               {"item", MessageItem(shape_, acc_, "in_progress", piece_, false)}});
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
  Json delta = ref;
  delta["delta"] = call.arguments;
  out += Event("response.function_call_arguments.delta", std::move(delta));
  Json done = ref;
  done["arguments"] = call.arguments;
  out += Event("response.function_call_arguments.done", std::move(done));
  out += Event("response.output_item.done",
               Json{{"output_index", output_index}, {"item", FunctionCallItem(call, "completed")}});
  return out;
}

std::string ResponsesStream::Token(const std::string& text_delta, const TokenOut* tok) {
  if (parse_) {  // held back until the answer is parsed
    acc_.text += text_delta;
    if (tok) acc_.tokens.push_back(*tok);
    return "";
  }
  Json lps = Json::array();
  if (shape_.logprobs && tok) {
    lps = ChatLogprobs({*tok}, shape_.top_logprobs, piece_)["content"];
    acc_.tokens.push_back(*tok);
  }
  acc_.text += text_delta;
  return TextDelta(0, text_delta, std::move(lps));
}

std::string ResponsesStream::Finish(const std::string& text_delta, FinishReason why) {
  acc_.finish = why;
  return text_delta.empty() ? "" : Token(text_delta, nullptr);
}

std::string ResponsesStream::Done(const UsageCounts& usage) {
  const ParsedAnswer p = Calls(parse_, acc_);
  const bool incomplete = p.calls.empty() && Incomplete(acc_.finish);
  std::string out;
  if (!p.calls.empty()) {
    int index = 0;
    if (!p.content.empty()) {
      ChoiceResult text;
      text.text = p.content;
      // One statement per event: each takes the next sequence_number.
      out += MessageStart(index);
      out += TextDelta(index, p.content, Json::array());
      out += MessageEnd(index, text, false);
      ++index;
    }
    for (const ToolCall& call : p.calls) out += CallEvents(index++, call);
  } else {
    if (parse_) {  // held back: the whole text in one delta
      Json lps = shape_.logprobs ? ChatLogprobs(acc_.tokens, shape_.top_logprobs, piece_)["content"]
                                 : Json::array();
      out += MessageStart(0);
      out += TextDelta(0, acc_.text, std::move(lps));
    }
    out += MessageEnd(0, acc_, incomplete);
  }
  out += Event(incomplete ? "response.incomplete" : "response.completed",
               Json{{"response", FinalResponse(shape_, acc_, usage, piece_, p)}});
  return out;
}

}  // namespace stet::server
