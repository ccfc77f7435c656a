// Function tools on /v1/responses, in the Responses API's shapes, mapped onto
// chat's tools, tool_calls and tool messages.
#include "server/openai/responses_tools.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "http/api_error.h"
#include "http/json_fields.h"

namespace stet::server {

namespace {

// A string member `key` of `obj`, required (and non-empty when `non_empty`).
std::optional<ApiError> RequiredString(const Json& obj, const char* key, const std::string& at,
                                       bool non_empty, std::string* out) {
  auto it = obj.find(key);
  const std::string p = at + "." + key;
  if (it == obj.end() || !it->is_string())
    return BadRequest("'" + p + "' is required and must be a string", p);
  *out = it->get<std::string>();
  if (non_empty && out->empty()) return BadRequest("'" + p + "' must not be empty", p);
  return std::nullopt;
}

// One flat function tool -> chat's {"type": "function", "function": {...}}.
std::optional<ApiError> ReadTool(const Json& t, const std::string& tp, Json* chat_tool) {
  if (!t.is_object()) return BadRequest("'" + tp + "' must be an object", tp);
  const Json type = t.value("type", Json());
  if (type != "function")
    return BadRequest(
        "'" + tp + ".type' is " + Dump(type) + "; this server supports function tools only",
        tp + ".type");
  if (t.contains("function") && !t.contains("name"))
    return BadRequest("'" + tp +
                          ".name' is required: Responses function tools are flat "
                          "({\"type\": \"function\", \"name\", \"parameters\"}), not nested under "
                          "\"function\" as in chat",
                      tp + ".name");
  std::string name;
  STET_API_TRY(RequiredString(t, "name", tp, /*non_empty=*/true, &name));
  Json fn = Json::object();
  fn["name"] = name;
  STET_API_TRY(CopyString(t, "description", tp, &fn));
  auto params = t.find("parameters");
  if (params != t.end() && !params->is_null()) {
    if (!params->is_object())
      return BadRequest("'" + tp + ".parameters' must be a JSON Schema object", tp + ".parameters");
    fn["parameters"] = *params;
  } else {
    fn["parameters"] = Json{{"type", "object"}, {"properties", Json::object()}};
  }
  auto strict = t.find("strict");
  if (strict != t.end() && !strict->is_null() && !strict->is_boolean())
    return BadRequest("'" + tp + ".strict' must be a boolean", tp + ".strict");
  *chat_tool = Json{{"type", "function"}, {"function", std::move(fn)}};
  return std::nullopt;
}

std::optional<ApiError> ReadToolChoice(const Json& choice, ResponsesTools* out) {
  out->tool_choice = choice;
  if (choice.is_string()) {
    if (choice == "required") {
      out->forced = "*";
      return std::nullopt;
    }
    if (choice == "none" || choice == "auto") return std::nullopt;
  } else if (choice.is_object() && choice.value("type", Json()) == "function") {
    const Json name = choice.value("name", Json());
    if (name.is_string() && !name.get<std::string>().empty()) {
      out->forced = name.get<std::string>();
      return std::nullopt;
    }
    return BadRequest("'tool_choice.name' must be a non-empty string", "tool_choice.name");
  }
  return BadRequest(
      "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
      "\"name\": ...}, not " +
          Dump(choice),
      "tool_choice");
}

// The text of a function_call_output's output: a string, or input_text parts joined by "\n".
std::optional<ApiError> OutputText(const Json& output, const std::string& p, std::string* out) {
  if (output.is_string()) {
    *out = output.get<std::string>();
    return std::nullopt;
  }
  if (!output.is_array())
    return BadRequest("'" + p + "' must be a string or an array of input_text parts", p);
  std::string text;
  for (size_t i = 0; i < output.size(); ++i) {
    const Json& part = output[i];
    const std::string pp = p + "[" + std::to_string(i) + "]";
    if (!part.is_object() || part.value("type", Json()) != "input_text" ||
        !part.value("text", Json()).is_string())
      return BadRequest("'" + pp + "' must be {\"type\": \"input_text\", \"text\": ...}", pp);
    if (i > 0) text += "\n";
    text += part["text"].get<std::string>();
  }
  *out = std::move(text);
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ReadResponsesTools(const Json& body, ResponsesTools* out) {
  auto tools = body.find("tools");
  if (tools != body.end() && !tools->is_null()) {
    if (!tools->is_array())
      return BadRequest(std::string("'tools' must be an array, not ") + TypeName(*tools), "tools");
    Json chat = Json::array();
    for (size_t i = 0; i < tools->size(); ++i) {
      Json t;
      STET_API_TRY(ReadTool((*tools)[i], "tools[" + std::to_string(i) + "]", &t));
      chat.push_back(std::move(t));
    }
    out->echo = *tools;
    if (!chat.empty()) out->chat_tools = std::move(chat);
  }
  auto choice = body.find("tool_choice");
  if (choice != body.end() && !choice->is_null()) STET_API_TRY(ReadToolChoice(*choice, out));
  if (!out->forced.empty() && out->chat_tools.is_null())
    return BadRequest("'tool_choice' forces a tool call but 'tools' is empty", "tool_choice");
  STET_API_TRY(ReadBool(body, "parallel_tool_calls", &out->parallel));
  out->parse = !out->chat_tools.is_null() && out->tool_choice != "none";
  return std::nullopt;
}

std::optional<ApiError> AppendToolItem(const Json& item, const std::string& ip, Json* messages,
                                       CallNames* names) {
  const Json type = item.value("type", Json());
  std::string call_id;
  STET_API_TRY(RequiredString(item, "call_id", ip, /*non_empty=*/true, &call_id));
  if (type == "function_call") {
    std::string name, arguments;
    STET_API_TRY(RequiredString(item, "name", ip, /*non_empty=*/true, &name));
    STET_API_TRY(RequiredString(item, "arguments", ip, /*non_empty=*/false, &arguments));
    names->try_emplace(call_id, name);
    Json call = Json{{"id", call_id},
                     {"type", "function"},
                     {"function", Json{{"name", name}, {"arguments", arguments}}}};
    // Calls right after an assistant message (or each other) are that message's tool_calls.
    if (!messages->empty() && messages->back().value("role", Json()) == "assistant") {
      Json& last = messages->back();
      if (!last.contains("tool_calls")) last["tool_calls"] = Json::array();
      last["tool_calls"].push_back(std::move(call));
    } else {
      messages->push_back(Json{{"role", "assistant"},
                               {"content", nullptr},
                               {"tool_calls", Json::array({std::move(call)})}});
    }
    return std::nullopt;
  }
  auto output = item.find("output");
  if (output == item.end() || output->is_null())
    return BadRequest("'" + ip + ".output' is required", ip + ".output");
  std::string text;
  STET_API_TRY(OutputText(*output, ip + ".output", &text));
  Json msg = Json{{"role", "tool"}, {"tool_call_id", call_id}, {"content", std::move(text)}};
  auto named = names->find(call_id);
  if (named != names->end() && !named->second.empty()) msg["name"] = named->second;
  messages->push_back(std::move(msg));
  return std::nullopt;
}

std::string FunctionCallItemId(const ToolCall& call) {
  const std::string& id = call.id;
  return "fc_" + (id.rfind("call_", 0) == 0 ? id.substr(5) : id);
}

Json FunctionCallItem(const ToolCall& call, const char* status) {
  Json item = Json::object();
  item["id"] = FunctionCallItemId(call);
  item["type"] = "function_call";
  item["status"] = status;
  item["call_id"] = call.id;
  item["name"] = call.name;
  item["arguments"] = call.arguments;
  return item;
}

}  // namespace stet::server
