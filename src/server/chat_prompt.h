// Chat messages -> prompt token ids: the model's own chat template
// (tokenizer.chat_template in the GGUF) rendered by stet's Jinja engine with
// add_generation_prompt, or a ChatML fallback when the model has none.
// Invariant: the BOS token appears once — when the rendered text already
// starts with it (most templates write it), tokenization adds none.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "server/api_error.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace stet::server {

// The ChatML template used when a model ships none.
extern const char kChatMlFallbackTemplate[];

class ChatPrompt {
 public:
  // `source` empty: the ChatML fallback. Parse errors in the model's template are returned.
  static Result<ChatPrompt> Create(const std::string& source, const Tokenizer& tokenizer);

  // Renders and tokenizes (special-token text becomes its ids). `rendered` gets the text.
  // `now_unix`: the instant strftime_now() formats (absent: ChatTemplateOptions' fixed default).
  ApiOr<std::vector<int32_t>> Build(const Json& messages, const Json& tools,
                                    std::string* rendered = nullptr,
                                    std::optional<int64_t> now_unix = std::nullopt) const;
  // The template text rendered (the model's, or the ChatML fallback).
  const std::string& source() const { return tmpl_.source(); }

  bool is_fallback() const { return fallback_; }
  // Stop strings the fallback needs on vocabularies without ChatML tokens ("<|im_end|>").
  const std::vector<std::string>& extra_stops() const { return extra_stops_; }

 private:
  ChatPrompt(ChatTemplate tmpl, const Tokenizer& tok) : tmpl_(std::move(tmpl)), tok_(&tok) {}
  ChatTemplate tmpl_;
  const Tokenizer* tok_;
  bool fallback_ = false;
  std::string bos_text_, eos_text_;
  std::vector<std::string> extra_stops_;
};

}  // namespace stet::server
