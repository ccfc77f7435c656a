// Chat template rendering and tokenization for /v1/chat/completions, following
// llama.cpp's server: render with the model's bos/eos token texts, strip a
// leading BOS text the tokenizer would add again, parse special tokens.
#include "server/chat_prompt.h"

namespace stet::server {

const char kChatMlFallbackTemplate[] =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}";

Result<ChatPrompt> ChatPrompt::Create(const std::string& source, const Tokenizer& tokenizer) {
  const bool fallback = source.empty();
  STET_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::Parse(fallback ? kChatMlFallbackTemplate : source));
  ChatPrompt p(std::move(t), tokenizer);
  p.fallback_ = fallback;
  if (tokenizer.bos() >= 0) p.bos_text_ = std::string(tokenizer.TokenText(tokenizer.bos()));
  if (tokenizer.eos() >= 0) p.eos_text_ = std::string(tokenizer.TokenText(tokenizer.eos()));
  if (fallback) {
    auto im_end = tokenizer.FindToken("<|im_end|>");
    if (!im_end || !tokenizer.IsEog(*im_end)) p.extra_stops_.push_back("<|im_end|>");
  }
  return p;
}

ApiOr<std::vector<int32_t>> ChatPrompt::Build(const Json& messages, const Json& tools, std::string* rendered,
                                              std::optional<int64_t> now_unix) const {
  Json context = Json::object();
  context["messages"] = messages;
  context["tools"] = tools;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = true;
  context["bos_token"] = bos_text_;
  context["eos_token"] = eos_text_;
  ChatTemplateOptions options;
  if (now_unix) options.now_unix = *now_unix;
  auto text = tmpl_.Render(context, options);
  if (!text.ok()) {
    return BadRequest("The chat template rejected the messages: " + text.status().message(), "messages");
  }
  const std::string& s = *text;
  // The template wrote BOS itself: tokenize without adding another.
  const bool has_bos = tok_->bos() >= 0 && !bos_text_.empty() && s.compare(0, bos_text_.size(), bos_text_) == 0;
  std::vector<int32_t> ids = tok_->Encode(s, /*add_special=*/!has_bos, /*parse_special=*/true);
  if (rendered) *rendered = s;
  return ids;
}

}  // namespace stet::server
