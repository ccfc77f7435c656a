// Chat template rendering and tokenization for /v1/chat/completions, following
// llama.cpp's server: render with the model's bos/eos token texts, strip a
// leading BOS text the tokenizer would add again, parse special tokens. Every
// render runs under the server's TemplateLimits; a template that breaks them
// on a small conversation is refused when the model is loaded. The request's
// options (kwargs, generation prompt, prefill, clock) are read and checked here.
#include "server/openai/chat_prompt.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "http/json_fields.h"

namespace stet::server {

namespace {

// LoadCheck's conversations: the shapes every chat template is written for,
// one of them with a tool call and its result.
const Json& LoadCheckConversations() {
  static const auto* shapes = new Json(Json::parse(R"([
    {"tools": null, "messages": [
      {"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": "Hello! What can you do?"},
      {"role": "assistant", "content": "I can answer questions and call tools."},
      {"role": "user", "content": "What's the weather in Paris?"}]},
    {"tools": [{"type": "function", "function": {"name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "properties": {
          "location": {"type": "string", "description": "City name, e.g. Paris"},
          "unit": {"type": "string", "description": "Unit", "enum": ["celsius", "fahrenheit"]}},
          "required": ["location"]}}}],
     "messages": [
      {"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": "What's the weather in Paris?"},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "call0A1b2", "type": "function",
        "function": {"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}}}]},
      {"role": "tool", "tool_call_id": "call0A1b2", "name": "get_weather", "content": "{\"temperature\": 22}"},
      {"role": "assistant", "content": "It is 22 degrees Celsius in Paris."},
      {"role": "user", "content": "Thanks!"}]}
  ])"));
  return *shapes;
}

// The final message's text, as transformers finds what to continue: its
// content, or the last text part of a list of parts.
std::optional<std::string> FinalText(const Json& messages) {
  if (!messages.is_array() || messages.empty()) return std::nullopt;
  const Json& last = messages.back();
  const Json content = last.is_object() ? last.value("content", Json()) : Json();
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return std::nullopt;
  for (auto it = content.rbegin(); it != content.rend(); ++it) {
    if (it->is_object() && it->contains("text") && (*it)["text"].is_string())
      return (*it)["text"].get<std::string>();
  }
  return std::nullopt;
}

ApiError RenderRefusal(const Status& s) {
  // Past the load check, a limit is reached because of what these messages
  // hold (their size, or a shape the template loops on): the request's doing.
  if (s.code() == StatusCode::kResourceExhausted) {
    return BadRequest("The chat template exceeded a render limit on these messages: " + s.message(),
                      "messages", "template_limit_exceeded");
  }
  return BadRequest("The chat template rejected the messages: " + s.message(), "messages");
}

}  // namespace

const char* const kReservedTemplateKwargs[9] = {
    "messages",  "tools",     "documents",    "add_generation_prompt", "continue_final_message",
    "bos_token", "eos_token", "strftime_now", "raise_exception"};

std::optional<ApiError> CheckChatPromptOptions(const ChatPromptOptions& options) {
  const Json& kw = options.chat_template_kwargs;
  if (!kw.is_null() && !kw.is_object()) {
    return BadRequest(std::string("'chat_template_kwargs' must be an object whose keys become "
                                  "template variables, not ") +
                          TypeName(kw),
                      "chat_template_kwargs");
  }
  for (const char* name : kReservedTemplateKwargs) {
    if (kw.is_object() && kw.contains(name)) {
      return BadRequest("'chat_template_kwargs' may not set '" + std::string(name) +
                            "': the render sets it itself (messages, tools, documents, "
                            "add_generation_prompt, continue_final_message, bos_token, eos_token, "
                            "strftime_now and raise_exception are reserved; send messages, tools "
                            "and the two flags as the request's own fields)",
                        "chat_template_kwargs");
    }
  }
  if (options.add_generation_prompt && options.continue_final_message) {
    return BadRequest(
        "Cannot set both `continue_final_message` and `add_generation_prompt` to True.",
        "continue_final_message");
  }
  return std::nullopt;
}

ApiOr<ChatPromptOptions> ReadChatPromptOptions(const Json& body, int64_t now_unix) {
  ChatPromptOptions o;
  o.now_unix = now_unix;
  auto kw = body.find("chat_template_kwargs");
  if (kw != body.end()) o.chat_template_kwargs = *kw;
  STET_API_TRY(ReadBool(body, "continue_final_message", &o.continue_final_message));
  // A prefill has no generation prompt unless the client asks for both (a 400 below).
  o.add_generation_prompt = !o.continue_final_message;
  STET_API_TRY(ReadBool(body, "add_generation_prompt", &o.add_generation_prompt));
  STET_API_TRY(CheckChatPromptOptions(o));
  return o;
}

int64_t TemplateClock(std::optional<int64_t> pinned) {
  if (pinned) return *pinned;
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status ChatPrompt::LoadCheck(const ChatTemplate& tmpl, const TemplateLimits& limits) {
  ChatTemplateOptions options;
  options.limits = limits;
  for (const Json& shape : LoadCheckConversations()) {
    auto out = tmpl.Render(ChatTemplateContext(shape["messages"], shape["tools"],
                                               /*add_generation_prompt=*/true, "<s>", "</s>"),
                           options);
    if (!out.ok() && (out.status().code() == StatusCode::kResourceExhausted ||
                      out.status().code() == StatusCode::kCancelled)) {
      return ResourceExhausted("the chat template exceeded a render limit on a " +
                               std::to_string(shape["messages"].size()) +
                               "-message test conversation: " + out.status().message());
    }
  }
  return Status::Ok();
}

Result<ChatPrompt> ChatPrompt::Create(const ChatPromptSetup& setup, const Tokenizer& tokenizer) {
  ChatPromptOptions defaults;
  defaults.chat_template_kwargs = setup.default_kwargs;
  defaults.add_generation_prompt = false;
  if (auto e = CheckChatPromptOptions(defaults))
    return InvalidArgument("--chat-template-kwargs: " + e->message);
  BuiltinChoice builtin;
  if (setup.source.empty()) {
    ModelTraits traits;
    traits.architecture = setup.architecture;
    traits.name = setup.model_name;
    traits.tokenizer_model = tokenizer.vocab().model;
    traits.has_token = [&tokenizer](std::string_view t) {
      return tokenizer.FindToken(t).has_value();
    };
    builtin = ChooseBuiltinTemplate(traits);
  }
  const std::string_view text = builtin.tmpl ? builtin.tmpl->source : setup.source;
  STET_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::Parse(text, setup.limits));
  STET_RETURN_IF_ERROR(LoadCheck(t, setup.limits));
  ChatPrompt p(std::move(t), tokenizer);
  p.limits_ = setup.limits;
  p.default_kwargs_ = setup.default_kwargs;
  if (tokenizer.bos() >= 0) p.bos_text_ = std::string(tokenizer.TokenText(tokenizer.bos()));
  if (tokenizer.eos() >= 0) p.eos_text_ = std::string(tokenizer.TokenText(tokenizer.eos()));
  if (builtin.tmpl) {
    p.builtin_ = std::string(builtin.tmpl->name);
    p.builtin_reason_ = std::move(builtin.reason);
    // A vocabulary without the family's end-of-turn token (or without it as an
    // end of generation) would run past the answer: stop on its text.
    const std::string eot(builtin.tmpl->end_of_turn);
    auto id = tokenizer.FindToken(eot);
    if (!id || !tokenizer.IsEog(*id)) p.extra_stops_.push_back(eot);
  }
  return p;
}

Result<ChatPrompt> ChatPrompt::Create(const std::string& source, const Tokenizer& tokenizer,
                                      const TemplateLimits& limits) {
  ChatPromptSetup setup;
  setup.source = source;
  setup.limits = limits;
  return Create(setup, tokenizer);
}

Json ChatPrompt::Context(const Json& messages, const Json& tools,
                         const ChatPromptOptions& options) const {
  Json context = ChatTemplateContext(
      messages, tools, options.add_generation_prompt && !options.continue_final_message, bos_text_,
      eos_text_);
  // llama.cpp's variable for Llama 3.x's "Today Date" (their templates print a
  // fixed 26 Jul 2024 without it); a kwarg may set another.
  context["date_string"] = StrftimeUtc("%d %b %Y", options.now_unix);
  for (const Json* kw : {&default_kwargs_, &options.chat_template_kwargs}) {
    if (!kw->is_object()) continue;
    for (auto it = kw->begin(); it != kw->end(); ++it) context[it.key()] = it.value();
  }
  return context;
}

ApiOr<std::string> ChatPrompt::Render(const Json& messages, const Json& tools,
                                      const ChatPromptOptions& options) const {
  STET_API_TRY(CheckChatPromptOptions(options));
  ChatTemplateOptions topts;
  topts.limits = limits_;
  topts.now_unix = options.now_unix;
  auto text = tmpl_.Render(Context(messages, tools, options), topts);
  if (!text.ok()) return RenderRefusal(text.status());
  if (!options.continue_final_message) return std::move(*text);
  auto final_text = FinalText(messages);
  if (!final_text) {
    return BadRequest("continue_final_message needs a final message with text content to continue",
                      "continue_final_message");
  }
  auto open = ContinueFinalMessage(std::move(*text), *final_text);
  if (!open.ok()) return BadRequest(open.status().message(), "continue_final_message");
  return std::move(*open);
}

std::vector<int32_t> ChatPrompt::Tokenize(const std::string& s) const {
  // The template wrote BOS itself: tokenize without adding another.
  const bool has_bos =
      tok_->bos() >= 0 && !bos_text_.empty() && s.compare(0, bos_text_.size(), bos_text_) == 0;
  return tok_->Encode(s, /*add_special=*/!has_bos, /*parse_special=*/true);
}

ApiOr<std::vector<int32_t>> ChatPrompt::Build(const Json& messages, const Json& tools,
                                              const ChatPromptOptions& options,
                                              std::string* rendered, size_t max_bytes) const {
  auto text = Render(messages, tools, options);
  if (!text.ok()) return text.error();
  if (text->size() > max_bytes) {
    return ContextLengthExceeded("The rendered conversation is " + std::to_string(text->size()) +
                                     " bytes, more than any prompt that fits this model's context "
                                     "can hold; it was refused without tokenizing it.",
                                 "messages");
  }
  std::vector<int32_t> ids = Tokenize(*text);
  if (rendered) *rendered = std::move(*text);
  return ids;
}

ApiOr<std::vector<int32_t>> ChatPrompt::Build(const Json& messages, const Json& tools,
                                              std::string* rendered,
                                              std::optional<int64_t> now_unix,
                                              size_t max_bytes) const {
  ChatPromptOptions options;
  if (now_unix) options.now_unix = *now_unix;
  return Build(messages, tools, options, rendered, max_bytes);
}

ApiOr<std::string> ChatPrompt::Render(const Json& messages, const Json& tools,
                                      std::optional<int64_t> now_unix,
                                      bool add_generation_prompt) const {
  ChatPromptOptions options;
  if (now_unix) options.now_unix = *now_unix;
  options.add_generation_prompt = add_generation_prompt;
  return Render(messages, tools, options);
}

Json ChatPrompt::Describe() const {
  Json j = Json::object();
  j["builtin"] = is_fallback();
  j["name"] = is_fallback() ? Json(builtin_) : Json(nullptr);
  return j;
}

}  // namespace stet::server
