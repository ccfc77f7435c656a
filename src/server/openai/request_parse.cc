// Request-body validation for the completion endpoints. Unknown fields are
// ignored (as vLLM does); known fields must have the documented type and range.
#include "server/openai/request_parse.h"

#include <algorithm>
#include <limits>

#include "http/api_error.h"
#include "http/json_fields.h"
#include "server/structured/structured_output.h"

namespace stet::server {

namespace {

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
constexpr int64_t kIntMin = std::numeric_limits<int32_t>::min();

std::optional<ApiError> ReadModel(const Json& body, const ServedModel& served, std::string* out) {
  auto it = body.find("model");
  if (it == body.end() || it->is_null()) {
    return BadRequest("You must provide a model parameter.", "model");
  }
  if (!it->is_string())
    return BadRequest(std::string("'model' must be a string, not ") + TypeName(*it), "model");
  *out = it->get<std::string>();
  if (!served.Matches(*out)) return ModelNotFound(*out);
  return std::nullopt;
}

std::optional<ApiError> ReadStop(const Json& body, std::vector<std::string>* out) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return std::nullopt;
  const auto too_long = [](const Json& s) {
    return s.get_ref<const std::string&>().size() > kMaxStopBytes;
  };
  const auto too_long_error = [] {
    return BadRequest(
        "'stop' sequences must be at most " + std::to_string(kMaxStopBytes) + " bytes long",
        "stop");
  };
  if (it->is_string()) {
    if (too_long(*it)) return too_long_error();
    out->push_back(it->get<std::string>());
    return std::nullopt;
  }
  if (!it->is_array())
    return BadRequest(
        std::string("'stop' must be a string or an array of strings, not ") + TypeName(*it),
        "stop");
  if (it->size() > static_cast<size_t>(kMaxStop)) {
    return BadRequest("'stop' holds " + std::to_string(it->size()) + " sequences; at most " +
                          std::to_string(kMaxStop) + " are allowed",
                      "stop");
  }
  for (const Json& s : *it) {
    if (!s.is_string())
      return BadRequest(std::string("'stop' entries must be strings, not ") + TypeName(s), "stop");
    if (too_long(s)) return too_long_error();
    out->push_back(s.get<std::string>());
  }
  return std::nullopt;
}

// Keys must be token ids and values numbers; ids and ranges are the engine's to check.
std::optional<ApiError> ReadLogitBias(const Json& body, std::map<int32_t, float>* out) {
  auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object())
    return BadRequest(
        std::string("'logit_bias' must be an object mapping token ids to biases, not ") +
            TypeName(*it),
        "logit_bias");
  if (it->size() > static_cast<size_t>(kMaxLogitBias)) {
    return BadRequest("'logit_bias' holds " + std::to_string(it->size()) + " entries; at most " +
                          std::to_string(kMaxLogitBias) + " are allowed",
                      "logit_bias");
  }
  for (auto kv = it->begin(); kv != it->end(); ++kv) {
    const std::string& key = kv.key();
    int64_t id = -1;
    bool digits = !key.empty() && key.size() <= 10 &&
                  std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) id = std::stoll(key);
    if (!digits || id > kIntMax) {
      return BadRequest("'logit_bias' keys must be token ids (decimal integers), not '" + key + "'",
                        "logit_bias");
    }
    const Json& v = kv.value();
    if (!v.is_number())
      return BadRequest(std::string("'logit_bias' values must be numbers, not ") + TypeName(v),
                        "logit_bias");
    (*out)[static_cast<int32_t>(id)] = static_cast<float>(v.get<double>());
  }
  return std::nullopt;
}

// The sampling fields. Only the API's own policy is checked here (temperature
// at most 2, top_p 0 and top_k -1 as spelled by OpenAI and vLLM); the ranges
// are the engine's (ValidateRequest, run by BuildParams).
std::optional<ApiError> ReadSampling(const Json& body, SamplingParams* sp) {
  STET_API_TRY(ReadFloat(body, "temperature", &sp->temperature));
  if (sp->temperature > kMaxTemperature) {
    return BadRequest("'temperature' must be at most " +
                          std::to_string(static_cast<int>(kMaxTemperature)) +
                          " (the OpenAI API's range is [0, 2])",
                      "temperature");
  }
  STET_API_TRY(ReadFloat(body, "top_p", &sp->top_p));
  if (sp->top_p == 0.0f) {  // keep only the most likely token: greedy
    sp->temperature = 0.0f;
    sp->top_p = 1.0f;
  }
  STET_API_TRY(ReadInt(body, "top_k", &sp->top_k));
  if (sp->top_k == -1) sp->top_k = 0;  // vLLM's "off"
  STET_API_TRY(ReadFloat(body, "min_p", &sp->min_p));
  STET_API_TRY(ReadFloat(body, "repetition_penalty", &sp->repetition_penalty));
  STET_API_TRY(ReadFloat(body, "presence_penalty", &sp->presence_penalty));
  STET_API_TRY(ReadFloat(body, "frequency_penalty", &sp->frequency_penalty));
  STET_API_TRY(ReadLogitBias(body, &sp->logit_bias));
  STET_API_TRY(ReadSeed(body, "seed", &sp->seed));
  return std::nullopt;
}

std::optional<ApiError> ReadCommon(const Json& body, CommonFields* s) {
  STET_API_TRY(ReadInt(body, "n", &s->params.n));
  STET_API_TRY(ReadSampling(body, &s->params.sampling));
  STET_API_TRY(ReadStop(body, &s->params.stop));
  STET_API_TRY(ReadBool(body, "ignore_eos", &s->params.ignore_eos));
  auto spec = body.find("speculative");  // extension: speculation on/off (never changes bytes)
  if (spec != body.end() && !spec->is_null()) {
    bool on = false;
    STET_API_TRY(ReadBool(body, "speculative", &on));
    s->params.speculative = on;
  }
  STET_API_TRY(ReadBool(body, "stream", &s->stream));
  STET_API_TRY(ReadString(body, "user", &s->user));
  STET_API_TRY(ReadString(body, "cache_salt", &s->cache_salt));
  if (s->cache_salt.size() > kMaxCacheSaltBytes) {
    return BadRequest(
        "'cache_salt' must be at most " + std::to_string(kMaxCacheSaltBytes) + " bytes long",
        "cache_salt");
  }
  auto so = body.find("stream_options");
  if (so != body.end() && !so->is_null()) {
    if (!so->is_object())
      return BadRequest(std::string("'stream_options' must be an object, not ") + TypeName(*so),
                        "stream_options");
    if (!s->stream)
      return BadRequest("'stream_options' is only allowed when 'stream' is true", "stream_options");
    STET_API_TRY(ReadBool(*so, "include_usage", &s->include_usage));
  }
  auto bo = body.find("best_of");
  if (bo != body.end() && !bo->is_null()) {
    int best_of = s->params.n;
    STET_API_TRY(ReadInt(body, "best_of", 1, kMaxChoices, &best_of));
    if (best_of != s->params.n)
      return BadRequest("'best_of' other than n is not supported", "best_of");
  }
  return std::nullopt;
}

std::optional<ApiError> ReadTokenArray(const Json& arr, const char* param,
                                       std::vector<int32_t>* out) {
  out->reserve(arr.size());
  for (const Json& v : arr) {
    // Whether an id is in the vocabulary is the engine's to check.
    if (!v.is_number_integer() || v.get<int64_t>() < kIntMin || v.get<int64_t>() > kIntMax) {
      return BadRequest(std::string("'") + param + "' token ids must be 32-bit integers", param);
    }
    out->push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return std::nullopt;
}

std::optional<ApiError> ReadPrompt(const Json& body, std::vector<PromptInput>* out) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null())
    return BadRequest("You must provide a prompt parameter.", "prompt");
  const Json& p = *it;
  const auto type_error = [&] {
    return BadRequest(
        "'prompt' must be a string, an array of strings, an array of token ids or an array of "
        "token-id arrays",
        "prompt");
  };
  if (p.is_string()) {
    out->push_back({true, p.get<std::string>(), {}});
    return std::nullopt;
  }
  if (!p.is_array()) return type_error();
  if (p.empty()) return BadRequest("'prompt' must not be an empty array", "prompt");
  if (p[0].is_number()) {  // one prompt of token ids
    PromptInput in;
    in.is_text = false;
    STET_API_TRY(ReadTokenArray(p, "prompt", &in.ids));
    out->push_back(std::move(in));
    return std::nullopt;
  }
  if (p.size() > static_cast<size_t>(kMaxPrompts)) {
    return BadRequest("'prompt' holds " + std::to_string(p.size()) + " prompts; at most " +
                          std::to_string(kMaxPrompts) + " are allowed",
                      "prompt");
  }
  for (const Json& e : p) {
    if (e.is_string()) {
      out->push_back({true, e.get<std::string>(), {}});
    } else if (e.is_array()) {
      PromptInput in;
      in.is_text = false;
      STET_API_TRY(ReadTokenArray(e, "prompt", &in.ids));
      out->push_back(std::move(in));
    } else {
      return type_error();
    }
  }
  return std::nullopt;
}

std::optional<ApiError> ReadMaxTokens(const Json& body, const char* key, int64_t lo,
                                      std::optional<int>* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  int v = 0;
  STET_API_TRY(ReadInt(body, key, static_cast<int>(lo), static_cast<int>(kIntMax), &v));
  *out = v;
  return std::nullopt;
}

// Text content: a string, or an array of {"type": "text", "text": ...} parts joined by "\n".
std::optional<ApiError> ReadContent(const Json& content, const std::string& param,
                                    std::string* out) {
  return ReadTextContent(
      content, param, std::string(", not ") + TypeName(content),
      [](const Json& part, const std::string& pp) {
        if (!part.is_object())
          return std::optional(BadRequest("'" + pp + "' must be an object", pp));
        auto type = part.find("type");
        if (type == part.end() || !type->is_string())
          return std::optional(BadRequest("'" + pp + ".type' must be a string", pp + ".type"));
        if (*type != "text") {
          return std::optional(BadRequest("'" + pp + ".type' is '" + type->get<std::string>() +
                                              "'; this server supports only text content parts",
                                          pp + ".type"));
        }
        return std::optional<ApiError>();
      },
      out);
}

std::optional<ApiError> ReadMessages(const Json& body, Json* out) {
  auto it = body.find("messages");
  if (it == body.end() || it->is_null())
    return BadRequest("You must provide a messages parameter.", "messages");
  if (!it->is_array())
    return BadRequest(std::string("'messages' must be an array, not ") + TypeName(*it), "messages");
  if (it->empty()) return BadRequest("'messages' must contain at least one message", "messages");
  *out = Json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& m = (*it)[i];
    const std::string mp = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return BadRequest("'" + mp + "' must be an object, not " + TypeName(m), mp);
    auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      return BadRequest("'" + mp + ".role' must be a string", mp + ".role");
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";
    if (r != "system" && r != "user" && r != "assistant" && r != "tool") {
      return BadRequest(
          "'" + mp + ".role' is '" + r + "'; expected system, developer, user, assistant or tool",
          mp + ".role");
    }
    Json msg = Json::object();
    msg["role"] = r;
    std::string content;
    auto c = m.find("content");
    if (c == m.end() || c->is_null()) {
      if (r != "assistant")
        return BadRequest("'" + mp + ".content' is required for role '" + r + "'", mp + ".content");
    } else {
      STET_API_TRY(ReadContent(*c, mp + ".content", &content));
    }
    msg["content"] = content;
    STET_API_TRY(CopyString(m, "name", mp, &msg));
    auto calls = m.find("tool_calls");
    if (calls != m.end() && !calls->is_null()) {
      if (r != "assistant")
        return BadRequest("'" + mp + ".tool_calls' is allowed only for role 'assistant'",
                          mp + ".tool_calls");
      if (!calls->is_array())
        return BadRequest("'" + mp + ".tool_calls' must be an array", mp + ".tool_calls");
      for (const Json& call : *calls) {
        if (!call.is_object())
          return BadRequest("'" + mp + ".tool_calls' entries must be objects", mp + ".tool_calls");
      }
      msg["tool_calls"] = *calls;
    }
    STET_API_TRY(CopyString(m, "tool_call_id", mp, &msg));
    out->push_back(std::move(msg));
  }
  return std::nullopt;
}

// tool_choice: "none", "auto", "required" or {"type": "function", "function": {"name"}}.
std::optional<ApiError> ReadToolChoice(const Json& body, ToolUse* t) {
  auto choice = body.find("tool_choice");
  bool choice_none = false;
  if (choice != body.end() && !choice->is_null()) {
    if (choice->is_object()) {  // {"type": "function", "function": {"name": ...}}
      const Json fn = choice->value("function", Json());
      if (choice->value("type", Json()) != "function" || !fn.is_object() ||
          !fn.value("name", Json()).is_string())
        return BadRequest(
            "'tool_choice' as an object must be {\"type\": \"function\", \"function\": "
            "{\"name\": ...}}",
            "tool_choice");
      t->forced = fn["name"].get<std::string>();
      if (t->forced.empty())
        return BadRequest("'tool_choice.function.name' must not be empty", "tool_choice");
    } else if (choice->is_string() && *choice == "required") {
      t->forced = "*";
    } else if (!choice->is_string() || (*choice != "none" && *choice != "auto")) {
      return BadRequest(
          "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
          "\"function\": {\"name\": ...}}",
          "tool_choice");
    }
    choice_none = choice->is_string() && *choice == "none";
  }
  if (!t->forced.empty() && t->tools.is_null())
    return BadRequest("'tool_choice' forces a tool call but 'tools' is empty", "tool_choice");
  STET_API_TRY(ReadBool(body, "parallel_tool_calls", &t->parallel));
  t->parse = !t->tools.is_null() && !choice_none;
  return std::nullopt;
}

}  // namespace

bool ServedModel::Matches(const std::string& name) const {
  return name == id || name == file_name || name == file_stem ||
         std::find(aliases.begin(), aliases.end(), name) != aliases.end();
}

ApiOr<GenerationRequest> ParseCompletionRequest(const Json& body, const ServedModel& model) {
  GenerationRequest r;
  r.api = WireApi::kCompletions;
  r.default_max_tokens = kCompletionDefaultMaxTokens;
  std::string name;
  STET_API_TRY(ReadModel(body, model, &name));
  STET_API_TRY(ReadPrompt(body, &r.prompts));
  STET_API_TRY(ReadCommon(body, &r.s));
  STET_API_TRY(
      ReadMaxTokens(body, "max_tokens", kIntMin, &r.s.max_tokens));  // >= 0: the engine's check
  STET_API_TRY(ReadBool(body, "echo", &r.out.echo));
  auto lp = body.find("logprobs");
  if (lp != body.end() && !lp->is_null()) {
    int v = 0;
    STET_API_TRY(ReadInt(body, "logprobs", 0, kMaxCompletionLogprobs, &v));
    r.out.logprobs = v;
    r.s.params.top_logprobs = v;
    r.s.params.prompt_logprobs = r.out.echo;  // echo with logprobs scores the prompt
  }
  auto plp = body.find("prompt_logprobs");
  if (plp != body.end() && !plp->is_null()) {
    int k = 0;
    STET_API_TRY(ReadInt(body, "prompt_logprobs", 0, kMaxTopLogprobs, &k));
    r.out.prompt_logprobs = k;
    r.s.params.prompt_logprobs = true;
    // One top-k serves both lists; each response trims to what it asked.
    r.s.params.top_logprobs = std::max(r.s.params.top_logprobs, k);
  }
  std::string suffix;
  STET_API_TRY(ReadString(body, "suffix", &suffix));
  if (!suffix.empty()) return BadRequest("'suffix' is not supported", "suffix");
  const int n = r.s.params.n;  // n itself is the engine's to check
  if (n > 0 &&
      r.prompts.size() * static_cast<size_t>(n) > static_cast<size_t>(kMaxChoicesPerRequest)) {
    return BadRequest("prompts x n is " + std::to_string(r.prompts.size() * n) + "; at most " +
                          std::to_string(kMaxChoicesPerRequest) + " choices per request",
                      "n");
  }
  STET_API_TRY(ReadResponseFormat(body, &r.s.params));
  return r;
}

ApiOr<GenerationRequest> ParseChatRequest(const Json& body, const ServedModel& model) {
  GenerationRequest r;
  r.api = WireApi::kChat;
  std::string name;
  STET_API_TRY(ReadModel(body, model, &name));
  auto ids = body.find("prompt_token_ids");
  if (ids != body.end() && !ids->is_null()) {
    if (!ids->is_array() || ids->empty())
      return BadRequest("'prompt_token_ids' must be a non-empty array of token ids",
                        "prompt_token_ids");
    auto m = body.find("messages");
    if (m != body.end() && !m->is_null() && !(m->is_array() && m->empty())) {
      return BadRequest(
          "Give either 'messages' or 'prompt_token_ids' (the prompt as token ids, no template), "
          "not both",
          "prompt_token_ids");
    }
    PromptInput in;  // token in: the client rendered the prompt itself
    in.is_text = false;
    STET_API_TRY(ReadTokenArray(*ids, "prompt_token_ids", &in.ids));
    r.prompts.push_back(std::move(in));
    r.prompt_param = "prompt_token_ids";
  } else {
    STET_API_TRY(ReadMessages(body, &r.messages));
    r.prompt_param = "messages";
  }
  STET_API_TRY(ReadCommon(body, &r.s));
  // OpenAI's chat API asks for at least one token (the engine would score the prompt on 0).
  STET_API_TRY(ReadMaxTokens(body, "max_tokens", 1, &r.s.max_tokens));
  STET_API_TRY(ReadMaxTokens(body, "max_completion_tokens", 1, &r.s.max_tokens));
  bool logprobs = false;
  STET_API_TRY(ReadBool(body, "logprobs", &logprobs));
  int top_logprobs = 0;
  auto tl = body.find("top_logprobs");
  if (tl != body.end() && !tl->is_null()) {
    STET_API_TRY(ReadInt(body, "top_logprobs", &top_logprobs));  // 0..20: the engine's check
    if (!logprobs)
      return BadRequest("'top_logprobs' requires 'logprobs' to be true", "top_logprobs");
    r.s.params.top_logprobs = top_logprobs;
  }
  if (logprobs) r.out.logprobs = top_logprobs;
  STET_API_TRY(ParseTools(body, &r.tools.tools));
  STET_API_TRY(ReadToolChoice(body, &r.tools));
  STET_API_TRY(ReadResponseFormat(body, &r.s.params, &r.text_schema));
  // A forced call with a response format is OpenAI's: the call this turn, the
  // format for text turns. A raw GBNF grammar has no such meaning.
  if (!r.tools.forced.empty() && r.s.params.grammar && r.text_schema.is_null())
    return BadRequest("a forced 'tool_choice' cannot be combined with 'grammar'", "tool_choice");
  return r;
}

std::optional<ApiError> ReadTextContent(
    const Json& content, const std::string& param, const std::string& found,
    const std::function<std::optional<ApiError>(const Json& part, const std::string& pp)>&
        check_type,
    std::string* out) {
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) {
    return BadRequest("'" + param + "' must be a string or an array of content parts" + found,
                      param);
  }
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string pp = param + "[" + std::to_string(i) + "]";
    STET_API_TRY(check_type(part, pp));
    auto t = part.find("text");
    if (t == part.end() || !t->is_string())
      return BadRequest("'" + pp + ".text' must be a string", pp + ".text");
    if (i > 0) text += "\n";
    text += t->get<std::string>();
  }
  *out = std::move(text);
  return std::nullopt;
}

std::optional<ApiError> ParseMessages(const Json& body, Json* out) {
  return ReadMessages(body, out);
}

std::optional<ApiError> ParseTools(const Json& body, Json* out) {
  *out = nullptr;
  auto tools = body.find("tools");
  if (tools == body.end() || tools->is_null()) return std::nullopt;
  if (!tools->is_array())
    return BadRequest(std::string("'tools' must be an array, not ") + TypeName(*tools), "tools");
  for (const Json& t : *tools) {
    if (!t.is_object()) return BadRequest("'tools' entries must be objects", "tools");
  }
  if (!tools->empty()) *out = *tools;
  return std::nullopt;
}

std::optional<ApiError> ParseSampling(const Json& body, SamplingParams* sp) {
  return ReadSampling(body, sp);
}

std::optional<ApiError> ParseTokenIds(const Json& arr, const char* param,
                                      std::vector<int32_t>* out) {
  if (!arr.is_array())
    return BadRequest(std::string("'") + param + "' must be an array of token ids", param);
  return ReadTokenArray(arr, param, out);
}

ApiOr<RequestParams> BuildParams(const CommonFields& s, std::vector<int32_t> prompt,
                                 const RequestLimits& limits, std::optional<int> default_max_tokens,
                                 const char* prompt_param) {
  RequestParams p = s.params;
  const int room = limits.n_ctx - static_cast<int>(prompt.size());
  p.max_tokens = std::min(s.max_tokens.value_or(default_max_tokens.value_or(limits.n_ctx)), room);
  p.prompt = std::move(prompt);
  std::string field;
  const Status st = ValidateRequest(p, limits, &field);
  if (st.ok()) return p;
  if (st.code() == StatusCode::kResourceExhausted)
    return ContextLengthExceeded(st.message(), prompt_param);
  return BadRequest(st.message(), field == "prompt" ? prompt_param : field);
}

}  // namespace stet::server
