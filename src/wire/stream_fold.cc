// Stream folding: chat deltas append to message.content / refusal /
// reasoning_content, tool-call fragments merge by their index (id, type and
// name from the first fragment, arguments concatenated), logprobs.content
// lists concatenate; completions append text and the four logprobs arrays;
// responses keep the final `response` object of response.completed. Top-level
// fields keep their first non-null value, `usage` its last.
#include "wire/stream_fold.h"

namespace stet::wire {

namespace {

void AppendString(Json& obj, const char* key, const Json& piece) {
  if (!piece.is_string()) return;
  if (!obj.contains(key) || !obj[key].is_string()) obj[key] = "";
  obj[key].get_ref<std::string&>() += piece.get_ref<const std::string&>();  // amortized linear
}

void AppendArray(Json& obj, const char* key, const Json& items) {
  if (!items.is_array()) return;
  if (!obj.contains(key) || !obj[key].is_array()) obj[key] = Json::array();
  for (const auto& it : items) obj[key].push_back(it);
}

bool NonEmptyString(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() && !it->get<std::string>().empty();
}

void KeepTop(Json& top, const Json& j) {
  for (const char* k : {"id", "object", "created", "model", "system_fingerprint", "service_tier"}) {
    auto it = j.find(k);
    if (it != j.end() && !it->is_null() && (!top.contains(k) || top[k].is_null())) top[k] = *it;
  }
  auto u = j.find("usage");
  if (u != j.end() && !u->is_null()) top["usage"] = *u;
}

void MergeToolCalls(Json& message, const Json& deltas) {
  if (!deltas.is_array()) return;
  if (!message.contains("tool_calls") || !message["tool_calls"].is_array()) {
    message["tool_calls"] = Json::array();
  }
  Json& calls = message["tool_calls"];
  for (const auto& d : deltas) {
    if (!d.is_object()) continue;
    const int64_t idx = d.contains("index") && d["index"].is_number_integer()
                            ? d["index"].get<int64_t>()
                            : static_cast<int64_t>(calls.size());
    Json* call = nullptr;
    for (auto& c : calls) {
      if (IntOr(c, "_index", -1) == idx) call = &c;
    }
    if (!call) {
      calls.push_back(Json{{"_index", idx}});
      call = &calls.back();
    }
    for (const char* k : {"id", "type"}) {
      if (d.contains(k) && d[k].is_string() && !call->contains(k)) (*call)[k] = d[k];
    }
    if (d.contains("function") && d["function"].is_object()) {
      if (!call->contains("function")) (*call)["function"] = Json::object();
      const Json& f = d["function"];
      Json& cf = (*call)["function"];
      if (f.contains("name") && f["name"].is_string() && !cf.contains("name"))
        cf["name"] = f["name"];
      if (!cf.contains("arguments")) cf["arguments"] = "";
      AppendString(cf, "arguments", f.value("arguments", Json("")));
    }
  }
}

}  // namespace

bool IsTerminalEvent(ApiKind kind, const SseEvent& e) {
  if (kind != ApiKind::kResponses) return IsDoneEvent(e);
  for (const char* t : {"response.completed", "response.incomplete", "response.failed"}) {
    if (e.event == t) return true;
    if (e.event.empty() && e.data.find(std::string("\"") + t + "\"") != std::string::npos) {
      Json j = Json::parse(e.data, nullptr, false);
      if (j.is_object() && Str(j, "type") == t) return true;
    }
  }
  return false;
}

void StreamFold::Add(const SseEvent& e) {
  if (IsDoneEvent(e)) return;
  ++events_;
  Json j = Json::parse(e.data, nullptr, false);
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

void StreamFold::AddChoices(const Json& j, void (StreamFold::*merge)(const Json&, Json&),
                            const Json& fresh) {
  KeepTop(top_, j);
  if (!j.contains("choices") || !j["choices"].is_array()) return;
  for (const auto& c : j["choices"]) {
    if (!c.is_object()) continue;
    const int64_t idx = IntOr(c, "index", 0);
    Json& out = choices_[idx];
    if (out.is_null()) {
      out = Json{{"index", idx}};
      for (auto it = fresh.begin(); it != fresh.end(); ++it) out[it.key()] = it.value();
    }
    (this->*merge)(c, out);
    if (c.contains("finish_reason") && !c["finish_reason"].is_null())
      out["finish_reason"] = c["finish_reason"];
  }
}

void StreamFold::AddChat(const Json& j) {
  static const Json* fresh =
      new Json{{"message", Json{{"role", "assistant"}, {"content", nullptr}}},
               {"logprobs", nullptr},
               {"finish_reason", nullptr}};
  AddChoices(j, &StreamFold::MergeChat, *fresh);
}

void StreamFold::MergeChat(const Json& c, Json& out) {
  Json& msg = out["message"];
  if (c.contains("delta") && c["delta"].is_object()) {
    const Json& d = c["delta"];
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
    if (!out["logprobs"].is_object()) out["logprobs"] = Json{{"content", Json::array()}};
    AppendArray(out["logprobs"], "content", c["logprobs"].value("content", Json()));
    if (c["logprobs"].contains("refusal"))
      AppendArray(out["logprobs"], "refusal", c["logprobs"]["refusal"]);
  }
}

void StreamFold::AddCompletion(const Json& j) {
  static const Json* fresh =
      new Json{{"text", ""}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  AddChoices(j, &StreamFold::MergeCompletion, *fresh);
}

void StreamFold::MergeCompletion(const Json& c, Json& out) {
  if (NonEmptyString(c, "text")) {
    AppendString(out, "text", c["text"]);
    content_seen_ = true;
  }
  if (c.contains("logprobs") && c["logprobs"].is_object()) {
    if (!out["logprobs"].is_object()) out["logprobs"] = Json::object();
    for (const char* k : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
      AppendArray(out["logprobs"], k, c["logprobs"].value(k, Json()));
    }
  }
}

void StreamFold::AddResponses(const Json& j) {
  const std::string type = Str(j, "type");
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

Json StreamFold::Result() const {
  if (kind_ == ApiKind::kResponses) {
    Json r = response_ ? *response_ : top_;
    if (!responses_text_.empty() && !r.contains("output_text")) r["output_text"] = responses_text_;
    return r;
  }
  Json r = Json::object();
  for (const char* k : {"id", "object", "created", "model", "system_fingerprint", "service_tier"}) {
    if (top_.contains(k)) r[k] = top_[k];
  }
  r["object"] = kind_ == ApiKind::kChat ? "chat.completion" : "text_completion";
  Json choices = Json::array();
  for (const auto& [idx, c] : choices_) {
    Json out = c;
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

}  // namespace stet::wire
