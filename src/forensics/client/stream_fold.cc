// Stream folding: chat deltas append to message.content / refusal /
// reasoning_content, tool-call fragments merge by their index (id, type and
// name from the first fragment, arguments concatenated), logprobs.content
// lists concatenate; completions append text and the four logprobs arrays;
// responses keep the final `response` object of response.completed. Top-level
// fields keep their first non-null value, `usage` its last.
#include "forensics/client/stream_fold.h"

namespace stet::forensics {

namespace {

void AppendString(WireJson& obj, const char* key, const WireJson& piece) {
  if (!piece.is_string()) return;
  if (!obj.contains(key) || !obj[key].is_string()) obj[key] = "";
  obj[key].get_ref<std::string&>() += piece.get_ref<const std::string&>();  // amortized linear
}

// A field's string value; "" when absent or of another type (never throws).
std::string StringOr(const WireJson& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A field's integer value; `dflt` when absent or of another type (never throws).
int64_t IntOr(const WireJson& j, const char* key, int64_t dflt) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : dflt;
}

void AppendArray(WireJson& obj, const char* key, const WireJson& items) {
  if (!items.is_array()) return;
  if (!obj.contains(key) || !obj[key].is_array()) obj[key] = WireJson::array();
  for (const auto& it : items) obj[key].push_back(it);
}

bool NonEmptyString(const WireJson& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() && !it->get<std::string>().empty();
}

void KeepTop(WireJson& top, const WireJson& j) {
  for (const char* k : {"id", "object", "created", "model", "system_fingerprint", "service_tier"}) {
    auto it = j.find(k);
    if (it != j.end() && !it->is_null() && (!top.contains(k) || top[k].is_null())) top[k] = *it;
  }
  auto u = j.find("usage");
  if (u != j.end() && !u->is_null()) top["usage"] = *u;
}

void MergeToolCalls(WireJson& message, const WireJson& deltas) {
  if (!deltas.is_array()) return;
  if (!message.contains("tool_calls") || !message["tool_calls"].is_array()) {
    message["tool_calls"] = WireJson::array();
  }
  WireJson& calls = message["tool_calls"];
  for (const auto& d : deltas) {
    if (!d.is_object()) continue;
    const int64_t idx = d.contains("index") && d["index"].is_number_integer()
                            ? d["index"].get<int64_t>()
                            : static_cast<int64_t>(calls.size());
    WireJson* call = nullptr;
    for (auto& c : calls) {
      if (IntOr(c, "_index", -1) == idx) call = &c;
    }
    if (!call) {
      calls.push_back(WireJson{{"_index", idx}});
      call = &calls.back();
    }
    for (const char* k : {"id", "type"}) {
      if (d.contains(k) && d[k].is_string() && !call->contains(k)) (*call)[k] = d[k];
    }
    if (d.contains("function") && d["function"].is_object()) {
      if (!call->contains("function")) (*call)["function"] = WireJson::object();
      const WireJson& f = d["function"];
      WireJson& cf = (*call)["function"];
      if (f.contains("name") && f["name"].is_string() && !cf.contains("name"))
        cf["name"] = f["name"];
      if (!cf.contains("arguments")) cf["arguments"] = "";
      AppendString(cf, "arguments", f.value("arguments", WireJson("")));
    }
  }
}

}  // namespace

ApiKind ApiKindOfPath(const std::string& path) {
  if (path == "/v1/chat/completions") return ApiKind::kChat;
  if (path == "/v1/completions") return ApiKind::kCompletions;
  if (path == "/v1/responses") return ApiKind::kResponses;
  return ApiKind::kOther;
}

bool IsTerminalEvent(ApiKind kind, const SseEvent& e) {
  if (kind != ApiKind::kResponses) return IsDoneEvent(e);
  for (const char* t : {"response.completed", "response.incomplete", "response.failed"}) {
    if (e.event == t) return true;
    if (e.event.empty() && e.data.find(std::string("\"") + t + "\"") != std::string::npos) {
      WireJson j = WireJson::parse(e.data, nullptr, false);
      if (j.is_object() && StringOr(j, "type") == t) return true;
    }
  }
  return false;
}

void StreamFold::Add(const SseEvent& e) {
  if (IsDoneEvent(e)) return;
  ++events_;
  WireJson j = WireJson::parse(e.data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    ++bad_events_;
    return;
  }
  if (j.contains("error") && !j["error"].is_null()) error_ = j["error"];
  switch (kind_) {
    case ApiKind::kChat:
      return AddChat(j);
    case ApiKind::kCompletions:
      return AddCompletion(j);
    case ApiKind::kResponses:
      return AddResponses(j);
    case ApiKind::kOther:
      return;
  }
}

void StreamFold::AddChat(const WireJson& j) {
  KeepTop(top_, j);
  if (!j.contains("choices") || !j["choices"].is_array()) return;
  for (const auto& c : j["choices"]) {
    if (!c.is_object()) continue;
    const int64_t idx = IntOr(c, "index", 0);
    WireJson& out = choices_[idx];
    if (out.is_null()) {
      out = WireJson{{"index", idx},
                     {"message", WireJson{{"role", "assistant"}, {"content", nullptr}}},
                     {"logprobs", nullptr},
                     {"finish_reason", nullptr}};
    }
    WireJson& msg = out["message"];
    if (c.contains("delta") && c["delta"].is_object()) {
      const WireJson& d = c["delta"];
      if (d.contains("role") && d["role"].is_string()) msg["role"] = d["role"];
      for (const char* k : {"content", "refusal", "reasoning_content"}) {
        if (NonEmptyString(d, k)) {
          AppendString(msg, k, d[k]);
          if (std::string(k) != "reasoning_content") content_seen_ = true;
        }
      }
      if (d.contains("tool_calls") && d["tool_calls"].is_array() && !d["tool_calls"].empty()) {
        MergeToolCalls(msg, d["tool_calls"]);
        content_seen_ = true;
      }
    }
    if (c.contains("logprobs") && c["logprobs"].is_object()) {
      if (!out["logprobs"].is_object()) out["logprobs"] = WireJson{{"content", WireJson::array()}};
      AppendArray(out["logprobs"], "content", c["logprobs"].value("content", WireJson()));
      if (c["logprobs"].contains("refusal"))
        AppendArray(out["logprobs"], "refusal", c["logprobs"]["refusal"]);
    }
    if (c.contains("finish_reason") && !c["finish_reason"].is_null())
      out["finish_reason"] = c["finish_reason"];
  }
}

void StreamFold::AddCompletion(const WireJson& j) {
  KeepTop(top_, j);
  if (!j.contains("choices") || !j["choices"].is_array()) return;
  for (const auto& c : j["choices"]) {
    if (!c.is_object()) continue;
    const int64_t idx = IntOr(c, "index", 0);
    WireJson& out = choices_[idx];
    if (out.is_null()) {
      out =
          WireJson{{"index", idx}, {"text", ""}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
    }
    if (NonEmptyString(c, "text")) {
      AppendString(out, "text", c["text"]);
      content_seen_ = true;
    }
    if (c.contains("logprobs") && c["logprobs"].is_object()) {
      if (!out["logprobs"].is_object()) out["logprobs"] = WireJson::object();
      for (const char* k : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
        AppendArray(out["logprobs"], k, c["logprobs"].value(k, WireJson()));
      }
    }
    if (c.contains("finish_reason") && !c["finish_reason"].is_null())
      out["finish_reason"] = c["finish_reason"];
  }
}

void StreamFold::AddResponses(const WireJson& j) {
  const std::string type = StringOr(j, "type");
  if (j.contains("response") && j["response"].is_object()) {
    KeepTop(top_, j["response"]);
    if (type == "response.completed" || type == "response.incomplete" ||
        type == "response.failed" || !response_) {
      response_ = j["response"];
    }
  }
  if (type == "response.output_text.delta" && NonEmptyString(j, "delta")) {
    responses_text_ += j["delta"].get<std::string>();
    content_seen_ = true;
  }
  if (type == "response.function_call_arguments.delta") content_seen_ = true;
}

WireJson StreamFold::Result() const {
  if (kind_ == ApiKind::kResponses) {
    WireJson r = response_ ? *response_ : top_;
    if (!responses_text_.empty() && !r.contains("output_text")) r["output_text"] = responses_text_;
    return r;
  }
  WireJson r = WireJson::object();
  for (const char* k : {"id", "object", "created", "model", "system_fingerprint", "service_tier"}) {
    if (top_.contains(k)) r[k] = top_[k];
  }
  r["object"] = kind_ == ApiKind::kChat ? "chat.completion" : "text_completion";
  WireJson choices = WireJson::array();
  for (const auto& [idx, c] : choices_) {
    WireJson out = c;
    if (out.contains("message") && out["message"].contains("tool_calls")) {
      for (auto& call : out["message"]["tool_calls"]) call.erase("_index");
    }
    choices.push_back(std::move(out));
  }
  r["choices"] = std::move(choices);
  if (top_.contains("usage")) r["usage"] = top_["usage"];
  if (error_) r["error"] = *error_;
  return r;
}

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
  if (request.contains("messages") && request["messages"].is_array()) {
    WireJson sys = WireJson::array();
    for (const auto& m : request["messages"]) {
      if (!m.is_object()) continue;
      const std::string role = StringOr(m, "role");
      if (role == "system" || role == "developer")
        sys.push_back(WireJson{{"role", role}, {"content", m.value("content", WireJson())}});
    }
    if (!sys.empty()) s["system"] = std::move(sys);
  }
  if (request.contains("input") &&
      request["input"].is_array()) {  // responses: system items in `input`
    WireJson sys = WireJson::array();
    for (const auto& m : request["input"]) {
      if (!m.is_object()) continue;
      const std::string role = StringOr(m, "role");
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
