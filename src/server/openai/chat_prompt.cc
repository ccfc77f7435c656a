// Chat template rendering and tokenization for /v1/chat/completions, following
// llama.cpp's server: render with the model's bos/eos token texts, strip a
// leading BOS text the tokenizer would add again, parse special tokens. Every
// render runs under the server's TemplateLimits; a template that breaks them
// on a small conversation is refused when the model is loaded.
#include "server/openai/chat_prompt.h"

#include <nlohmann/json.hpp>

namespace stet::server {

const char kChatMlFallbackTemplate[] =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\\n' }}"
    "{% endif %}";

namespace {

// The context a chat request renders with (add_generation_prompt: true).
Json RenderContext(const Json& messages, const Json& tools, const std::string& bos,
                   const std::string& eos, bool add_generation_prompt = true) {
  Json context = Json::object();
  context["messages"] = messages;
  context["tools"] = tools;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = add_generation_prompt;
  context["bos_token"] = bos;
  context["eos_token"] = eos;
  return context;
}

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

}  // namespace

Status ChatPrompt::LoadCheck(const ChatTemplate& tmpl, const TemplateLimits& limits) {
  ChatTemplateOptions options;
  options.limits = limits;
  for (const Json& shape : LoadCheckConversations()) {
    auto out =
        tmpl.Render(RenderContext(shape["messages"], shape["tools"], "<s>", "</s>"), options);
    if (!out.ok() && (out.status().code() == StatusCode::kResourceExhausted ||
                      out.status().code() == StatusCode::kCancelled)) {
      return ResourceExhausted("the chat template exceeded a render limit on a " +
                               std::to_string(shape["messages"].size()) +
                               "-message test conversation: " + out.status().message());
    }
  }
  return Status::Ok();
}

Result<ChatPrompt> ChatPrompt::Create(const std::string& source, const Tokenizer& tokenizer,
                                      const TemplateLimits& limits) {
  const bool fallback = source.empty();
  STET_ASSIGN_OR_RETURN(ChatTemplate t,
                        ChatTemplate::Parse(fallback ? kChatMlFallbackTemplate : source, limits));
  STET_RETURN_IF_ERROR(LoadCheck(t, limits));
  ChatPrompt p(std::move(t), tokenizer);
  p.limits_ = limits;
  p.fallback_ = fallback;
  if (tokenizer.bos() >= 0) p.bos_text_ = std::string(tokenizer.TokenText(tokenizer.bos()));
  if (tokenizer.eos() >= 0) p.eos_text_ = std::string(tokenizer.TokenText(tokenizer.eos()));
  if (fallback) {
    auto im_end = tokenizer.FindToken("<|im_end|>");
    if (!im_end || !tokenizer.IsEog(*im_end)) p.extra_stops_.push_back("<|im_end|>");
  }
  return p;
}

ApiOr<std::string> ChatPrompt::Render(const Json& messages, const Json& tools,
                                      std::optional<int64_t> now_unix,
                                      bool add_generation_prompt) const {
  ChatTemplateOptions options;
  options.limits = limits_;
  if (now_unix) options.now_unix = *now_unix;
  auto text = tmpl_.Render(
      RenderContext(messages, tools, bos_text_, eos_text_, add_generation_prompt), options);
  if (!text.ok()) {
    // Past the load check, a limit is reached because of what these messages
    // hold (their size, or a shape the template loops on): the request's doing.
    if (text.status().code() == StatusCode::kResourceExhausted) {
      return BadRequest(
          "The chat template exceeded a render limit on these messages: " + text.status().message(),
          "messages", "template_limit_exceeded");
    }
    return BadRequest("The chat template rejected the messages: " + text.status().message(),
                      "messages");
  }
  return std::move(*text);
}

std::vector<int32_t> ChatPrompt::Tokenize(const std::string& s) const {
  // The template wrote BOS itself: tokenize without adding another.
  const bool has_bos =
      tok_->bos() >= 0 && !bos_text_.empty() && s.compare(0, bos_text_.size(), bos_text_) == 0;
  return tok_->Encode(s, /*add_special=*/!has_bos, /*parse_special=*/true);
}

ApiOr<std::vector<int32_t>> ChatPrompt::Build(const Json& messages, const Json& tools,
                                              std::string* rendered,
                                              std::optional<int64_t> now_unix,
                                              size_t max_bytes) const {
  auto text = Render(messages, tools, now_unix);
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

}  // namespace stet::server
