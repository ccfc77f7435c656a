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
  STET_API_TRY(ParseMessages(Json{{"messages", std::move(messages)}}, &r.messages));
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
