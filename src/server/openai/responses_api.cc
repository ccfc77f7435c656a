// The Responses API's request parsing. Input items become chat messages (the
// same normalization as /v1/chat/completions), so a Responses request and the
// equivalent chat request render the same prompt and, with the same seed,
// give the same text.
#include "server/openai/responses_api.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "http/api_error.h"
#include "http/json_fields.h"
#include "server/openai/request_parse.h"
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
  return ReadTextContent(
      content, param, "",
      [](const Json& part, const std::string& pp) {
        const Json type = part.is_object() ? part.value("type", Json()) : Json();
        if (type != "input_text" && type != "output_text" && type != "text") {
          return std::optional(BadRequest(
              "'" + pp + ".type' must be input_text or output_text (this server takes text only)",
              pp + ".type"));
        }
        return std::optional<ApiError>();
      },
      out);
}

// A message item -> one chat message.
std::optional<ApiError> AppendMessageItem(const Json& item, const std::string& ip, Json* messages) {
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
  return std::nullopt;
}

// A reasoning item (as the openai SDK sends an earlier answer's back): its
// content's reasoning_text parts joined by "\n" (summary parts when it has no
// content). encrypted_content cannot be read here and is refused.
std::optional<ApiError> ReasoningItemText(const Json& item, const std::string& ip,
                                          std::string* out) {
  if (Present(item, "encrypted_content"))
    return BadRequest("'" + ip +
                          ".encrypted_content' is not supported: this server encrypts no "
                          "reasoning (send its content)",
                      ip + ".encrypted_content");
  for (const char* key : {"content", "summary"}) {
    auto parts = item.find(key);
    if (parts == item.end() || parts->is_null()) continue;
    const std::string kp = ip + "." + key;
    if (!parts->is_array()) return BadRequest("'" + kp + "' must be an array of parts", kp);
    std::string text;
    for (size_t i = 0; i < parts->size(); ++i) {
      const Json& part = (*parts)[i];
      const std::string pp = kp + "[" + std::to_string(i) + "]";
      auto t = part.is_object() ? part.find("text") : part.end();
      if (!part.is_object() || t == part.end() || !t->is_string())
        return BadRequest("'" + pp + ".text' must be a string", pp + ".text");
      if (i > 0) text += "\n";
      text += t->get<std::string>();
    }
    if (!parts->empty()) {
      *out = std::move(text);
      return std::nullopt;
    }
  }
  out->clear();
  return std::nullopt;
}

// Pending reasoning goes with the assistant turn that follows it (the first
// message appended since `before`, when it is the assistant's) as its
// reasoning_content, which templates with a thinking block render (Qwen 3,
// DeepSeek R1) and others ignore; before any other turn it is dropped.
void AttachReasoning(size_t before, Json* messages, std::optional<std::string>* reasoning) {
  Json* target = nullptr;
  if (messages->size() > before) {
    target = &(*messages)[before];
  } else if (!messages->empty()) {
    target = &messages->back();  // a call merged into the assistant message before it
  }
  if (target && target->value("role", Json()) == "assistant" &&
      !target->contains("reasoning_content") && !(*reasoning)->empty())
    (*target)["reasoning_content"] = **reasoning;
  reasoning->reset();
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
  std::optional<std::string> reasoning;  // a reasoning item's text, for the next assistant turn
  for (size_t i = 0; i < in->size(); ++i) {
    const Json& item = (*in)[i];
    const std::string ip = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) return BadRequest("'" + ip + "' must be an object", ip);
    const Json type = item.value("type", Json("message"));
    if (type == "reasoning") {
      std::string text;
      STET_API_TRY(ReasoningItemText(item, ip, &text));
      reasoning = reasoning ? *reasoning + "\n" + text : text;
      continue;
    }
    const size_t before = messages->size();
    if (type == "function_call" || type == "function_call_output") {
      STET_API_TRY(AppendToolItem(item, ip, messages, &names));
    } else if (type != "message") {
      return BadRequest("'" + ip + ".type' is " + Dump(type) +
                            "; this server takes message, reasoning, function_call and "
                            "function_call_output items",
                        ip + ".type");
    } else {
      STET_API_TRY(AppendMessageItem(item, ip, messages));
    }
    if (reasoning) AttachReasoning(before, messages, &reasoning);
  }
  if (messages->empty())
    return BadRequest("'input' holds reasoning items only; it needs a message", "input");
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

// include: ["message.output_text.logprobs"] (*logprobs true) or nothing.
std::optional<ApiError> ReadInclude(const Json& body, bool* logprobs) {
  auto inc = body.find("include");
  if (inc == body.end() || inc->is_null()) return std::nullopt;
  if (!inc->is_array()) return BadRequest("'include' must be an array of strings", "include");
  for (const Json& v : *inc) {
    if (v != kLogprobsInclude)
      return BadRequest("'include' supports only \"message.output_text.logprobs\", not " + Dump(v),
                        "include");
    *logprobs = true;
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

// text.format: structured outputs (a grammar on the request), echoed as given.
std::optional<ApiError> ReadText(const Json& body, RequestParams* p, Json* text_schema,
                                 Json* echo) {
  auto text = body.find("text");
  if (text == body.end() || text->is_null()) return std::nullopt;
  if (!text->is_object()) return BadRequest("'text' must be an object", "text");
  auto fmt = text->find("format");
  if (fmt != text->end() && !fmt->is_null()) {
    STET_API_TRY(ReadTextFormat(*fmt, "text.format", p, text_schema));
    (*echo)["text_format"] = *fmt;
  }
  return std::nullopt;
}

// What the response object repeats of a request that sets none of it.
Json DefaultEcho() {
  Json e = Json::object();
  e["instructions"] = nullptr;
  e["max_output_tokens"] = nullptr;
  e["metadata"] = Json::object();
  e["tool_choice"] = "auto";
  e["tools"] = Json::array();
  e["text_format"] = Json{{"type", "text"}};
  e["temperature"] = 1.0;
  e["top_p"] = 1.0;
  e["top_logprobs"] = 0;
  return e;
}

}  // namespace

ApiOr<GenerationRequest> ParseResponsesRequest(const Json& body, const ServedModel& model) {
  GenerationRequest r;
  r.api = WireApi::kResponses;
  r.prompt_param = "input";
  r.echo = DefaultEcho();
  STET_API_TRY(ReadModelName(body, model));
  STET_API_TRY(RefuseUnsupported(body));
  Json messages = Json::array();
  auto instr = body.find("instructions");
  if (instr != body.end() && !instr->is_null()) {
    if (!instr->is_string()) return BadRequest("'instructions' must be a string", "instructions");
    messages.push_back(Json{{"role", "system"}, {"content", *instr}});
    r.echo["instructions"] = *instr;
  }
  STET_API_TRY(ReadInput(body, &messages));
  // The chat parser's normalization (and its checks) on the messages built from the input.
  STET_API_TRY(ParseMessages(Json{{"messages", messages}}, &r.messages));
  // Reasoning items' text, which the chat parser does not carry (a chat
  // request's reasoning_content is not rendered), goes to the template here.
  for (size_t i = 0; i < messages.size() && i < r.messages.size(); ++i) {
    auto rc = messages[i].find("reasoning_content");
    if (rc != messages[i].end()) r.messages[i]["reasoning_content"] = *rc;
  }
  STET_API_TRY(ParseSampling(body, &r.s.params.sampling));
  STET_API_TRY(ReadBool(body, "ignore_eos", &r.s.params.ignore_eos));
  STET_API_TRY(ReadBool(body, "stream", &r.s.stream));
  if (Present(body, "max_output_tokens")) {
    int v = 0;
    STET_API_TRY(ReadInt(body, "max_output_tokens", 1, std::numeric_limits<int32_t>::max(), &v));
    r.s.max_tokens = v;
    r.echo["max_output_tokens"] = v;
  }
  STET_API_TRY(ReadText(body, &r.s.params, &r.text_schema, &r.echo));
  bool logprobs = false;
  STET_API_TRY(ReadInclude(body, &logprobs));
  int top_logprobs = 0;
  STET_API_TRY(ReadInt(body, "top_logprobs", &top_logprobs));  // 0..20: the engine's check
  r.echo["top_logprobs"] = top_logprobs;
  if (logprobs) {
    r.out.logprobs = top_logprobs;
    r.s.params.top_logprobs = top_logprobs;
  }
  if (Present(body, "temperature")) r.echo["temperature"] = body["temperature"];
  if (Present(body, "top_p")) r.echo["top_p"] = body["top_p"];
  ResponsesTools tools;
  STET_API_TRY(ReadResponsesTools(body, &tools));
  r.tools = {tools.chat_tools, tools.forced, tools.parallel, tools.parse};
  r.echo["tool_choice"] = tools.tool_choice;
  r.echo["tools"] = tools.echo;
  auto md = body.find("metadata");
  if (md != body.end() && md->is_object()) r.echo["metadata"] = *md;
  return r;
}

}  // namespace stet::server
