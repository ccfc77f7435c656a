// Reading answers in any of the three shapes, and the tool_calls array.
#include "wire/answer.h"

#include <algorithm>

namespace stet::wire {

namespace {

// e["logprob"] when e is an object holding a number there.
std::optional<double> LogprobOf(const Json& e) {
  auto it = e.find("logprob");
  return it != e.end() ? Num(*it) : std::nullopt;
}

// One alternative list: chat's [{"token", "logprob"}] or completions' {"token": logprob}.
std::vector<std::pair<std::string, std::optional<double>>> ReadTop(const Json& t) {
  std::vector<std::pair<std::string, std::optional<double>>> top;
  if (t.is_object()) {
    for (auto it = t.begin(); it != t.end(); ++it) top.emplace_back(it.key(), Num(it.value()));
  } else if (t.is_array()) {
    for (const Json& e : t) top.emplace_back(Str(e, "token"), LogprobOf(e));
  }
  return top;
}

// Chat's logprobs.content (and a Responses part's logprobs): one entry per token.
void ReadContentLogprobs(const Json& content, AnswerChoice* c) {
  c->has_logprobs = true;
  for (const Json& e : content) {
    AnswerToken t;
    t.token = Str(e, "token");
    auto b = e.find("bytes");
    if (b != e.end() && b->is_array()) {
      std::string bytes;
      for (const Json& v : *b) {
        if (v.is_number_integer()) bytes.push_back(static_cast<char>(v.get<int>()));
      }
      t.bytes = std::move(bytes);
    }
    t.logprob = LogprobOf(e);
    auto top = e.find("top_logprobs");
    if (top != e.end()) t.top = ReadTop(*top);
    c->tokens.push_back(std::move(t));
  }
}

// Completions' {"tokens", "token_logprobs", "top_logprobs", "text_offset"}.
void ReadCompletionLogprobs(const Json& lp, AnswerChoice* c) {
  c->has_logprobs = true;
  const Json empty = Json::array();
  const auto array_or_empty = [&](const char* key) -> const Json& {
    auto it = lp.find(key);
    return it != lp.end() && it->is_array() ? *it : empty;
  };
  const Json& toks = lp["tokens"];
  const Json& lps = array_or_empty("token_logprobs");
  const Json& tops = array_or_empty("top_logprobs");
  for (size_t i = 0; i < toks.size(); ++i) {
    AnswerToken t;
    t.token = toks[i].is_string() ? toks[i].get<std::string>() : "";
    if (i < lps.size()) t.logprob = Num(lps[i]);
    if (i < tops.size()) t.top = ReadTop(tops[i]);
    c->tokens.push_back(std::move(t));
  }
}

void ReadLogprobs(const Json& lp, AnswerChoice* c) {
  if (!lp.is_object()) return;
  auto content = lp.find("content");
  if (content != lp.end() && content->is_array()) return ReadContentLogprobs(*content, c);
  auto tokens = lp.find("tokens");
  if (tokens != lp.end() && tokens->is_array()) ReadCompletionLogprobs(lp, c);
}

// [{"id", "function": {"name", "arguments"}}] of a message or a delta.
void ReadToolCalls(const Json& calls, AnswerChoice* c) {
  if (!calls.is_array()) return;
  for (const Json& t : calls) {
    const Json f = t.is_object() ? t.value("function", Json::object()) : Json::object();
    c->tool_calls.push_back({Str(t, "id"), Str(f, "name"), Str(f, "arguments")});
  }
}

AnswerChoice ReadChoice(const Json& j) {
  AnswerChoice c;
  c.index = IntOr(j, "index", 0);
  c.finish_reason = Str(j, "finish_reason");
  const Json* message = nullptr;
  for (const char* key : {"message", "delta"}) {
    auto m = j.find(key);
    if (m != j.end() && m->is_object()) message = &*m;
  }
  if (message) {
    c.text = Str(*message, "content");
    if (message->contains("tool_calls")) ReadToolCalls((*message)["tool_calls"], &c);
  } else {
    c.text = Str(j, "text");
  }
  auto lp = j.find("logprobs");
  if (lp != j.end()) ReadLogprobs(*lp, &c);
  c.token_ids = Ids(j, "token_ids");
  c.prompt_token_ids = Ids(j, "prompt_token_ids");
  return c;
}

// A Responses object: its message items' text (and logprobs) and its
// function_call items, as one choice; the SDK's output_text when it has no output.
AnswerChoice ReadResponsesOutput(const Json& r) {
  AnswerChoice c;
  auto out = r.find("output");
  if (out == r.end() || !out->is_array()) {
    c.text = Str(r, "output_text");
    return c;
  }
  for (const Json& item : *out) {
    const std::string type = Str(item, "type");
    if (type == "function_call")
      c.tool_calls.push_back({Str(item, "call_id"), Str(item, "name"), Str(item, "arguments")});
    if (type != "message") continue;  // reasoning items' text is not the answer's
    auto content = item.find("content");
    if (content == item.end() || !content->is_array()) continue;
    for (const Json& part : *content) {
      if (Str(part, "type") != "output_text") continue;
      c.text += Str(part, "text");
      auto lp = part.find("logprobs");
      if (lp != part.end() && lp->is_array()) ReadContentLogprobs(*lp, &c);
    }
  }
  c.token_ids = Ids(r, "token_ids");
  return c;
}

}  // namespace

ApiKind ApiKindOfPath(const std::string& path) {
  if (path == "/v1/chat/completions") return ApiKind::kChat;
  if (path == "/v1/completions") return ApiKind::kCompletions;
  if (path == "/v1/responses") return ApiKind::kResponses;
  return ApiKind::kOther;
}

Json ToolCallsJson(const std::vector<ToolCall>& calls, bool indexed) {
  Json arr = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json c = Json::object();
    if (indexed) c["index"] = i;
    c["id"] = calls[i].id;
    c["type"] = "function";
    Json fn = Json::object();
    fn["name"] = calls[i].name;
    fn["arguments"] = calls[i].arguments;
    c["function"] = std::move(fn);
    arr.push_back(std::move(c));
  }
  return arr;
}

Answer ReadAnswer(const Json& body, ApiKind kind) {
  Answer a;
  if (!body.is_object()) return a;
  a.id = Str(body, "id");
  a.object = Str(body, "object");
  a.model = Str(body, "model");
  a.system_fingerprint = Str(body, "system_fingerprint");
  a.status = Str(body, "status");
  a.prompt_token_ids = Ids(body, "prompt_token_ids");
  a.usage = body.value("usage", Json());
  a.error = body.value("error", Json());
  const bool responses =
      kind == ApiKind::kResponses || (kind == ApiKind::kOther && !body.contains("choices") &&
                                      (body.contains("output") || a.object == "response"));
  if (responses) {
    a.has_choices = true;
    a.choices.push_back(ReadResponsesOutput(body));
    return a;
  }
  auto choices = body.find("choices");
  if (choices == body.end() || !choices->is_array()) return a;
  a.has_choices = true;
  for (const Json& c : *choices) a.choices.push_back(ReadChoice(c));
  std::stable_sort(a.choices.begin(), a.choices.end(),
                   [](const AnswerChoice& x, const AnswerChoice& y) { return x.index < y.index; });
  return a;
}

}  // namespace stet::wire
