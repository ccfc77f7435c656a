// The answer-shaping snapshot of a request, and logprobs stripped from answers.
#include "forensics/client/answer_shaping.h"

namespace stet::forensics {

using wire::Str;

bool StripChoiceLogprobs(WireJson& answer) {
  bool changed = false;
  if (!answer.is_object() || !answer.contains("choices") || !answer["choices"].is_array())
    return false;
  for (auto& c : answer["choices"]) {
    if (c.is_object() && c.contains("logprobs") && !c["logprobs"].is_null()) {
      c["logprobs"] = nullptr;
      changed = true;
    }
  }
  return changed;
}

WireJson AnswerShapingSnapshot(const WireJson& request) {
  if (!request.is_object()) return nullptr;
  WireJson s = WireJson::object();
  // System and developer turns: chat's messages, or the Responses API's input items.
  for (const char* key : {"messages", "input"}) {
    if (!request.contains(key) || !request[key].is_array()) continue;
    WireJson sys = WireJson::array();
    for (const auto& m : request[key]) {
      if (!m.is_object()) continue;
      const std::string role = Str(m, "role");
      if (role == "system" || role == "developer")
        sys.push_back(WireJson{{"role", role}, {"content", m.value("content", WireJson())}});
    }
    if (!sys.empty()) s["system"] = std::move(sys);
  }
  for (const char* k : {"instructions", "tools", "functions", "tool_choice", "response_format"}) {
    if (request.contains(k) && !request[k].is_null()) s[k] = request[k];
  }
  if (request.contains("text") && request["text"].is_object() &&
      request["text"].contains("format")) {
    s["text.format"] = request["text"]["format"];
  }
  if (s.empty()) return nullptr;
  return s;
}

std::string CanonicalJson(const WireJson& j) {
  // nlohmann::json (unordered) keeps object keys sorted: the canonical order.
  const nlohmann::json sorted = nlohmann::json::parse(
      j.dump(-1, ' ', false, WireJson::error_handler_t::replace), nullptr, false);
  return sorted.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace stet::forensics
