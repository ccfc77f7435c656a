// Chat messages -> prompt token ids: the model's own chat template
// (tokenizer.chat_template in the GGUF) rendered by stet's Jinja engine with
// add_generation_prompt, or a ChatML fallback when the model has none.
// Invariants: the BOS token appears once — when the rendered text already
// starts with it (most templates write it), tokenization adds none; every
// render runs under the TemplateLimits given at Create, and a template that
// breaks them on a small test conversation is refused at Create.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "http/api_error.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace stet::server {

// The ChatML template used when a model ships none.
extern const char kChatMlFallbackTemplate[];

class ChatPrompt {
 public:
  // `source` empty: the ChatML fallback. Parse errors in the model's template
  // are returned, and so is a limit the template exceeds on LoadCheck.
  static Result<ChatPrompt> Create(const std::string& source, const Tokenizer& tokenizer,
                                   const TemplateLimits& limits = {});

  // Renders `source` once against small fixed conversations (with and without
  // tools) under `limits`: ResourceExhausted naming the limit when it breaks
  // one. Other template errors (raise_exception on roles it does not support)
  // are not the check's concern and pass.
  static Status LoadCheck(const ChatTemplate& tmpl, const TemplateLimits& limits);

  // Renders and tokenizes (special-token text becomes its ids). `rendered` gets the text.
  // `now_unix`: the instant strftime_now() formats (absent: ChatTemplateOptions' fixed default).
  // A template error is a 400 (code template_limit_exceeded when it broke a limit).
  // A rendered text over `max_bytes` is a 400 context_length_exceeded, found
  // before it is tokenized (the caller's bound: no longer text fits the context).
  ApiOr<std::vector<int32_t>> Build(const Json& messages, const Json& tools,
                                    std::string* rendered = nullptr,
                                    std::optional<int64_t> now_unix = std::nullopt,
                                    size_t max_bytes = SIZE_MAX) const;
  // Build's two halves, for /apply-template and /tokenize: the rendered text
  // (add_generation_prompt false leaves the conversation open for a prefill),
  // and its tokens exactly as Build makes them.
  ApiOr<std::string> Render(const Json& messages, const Json& tools,
                            std::optional<int64_t> now_unix = std::nullopt,
                            bool add_generation_prompt = true) const;
  std::vector<int32_t> Tokenize(const std::string& rendered) const;
  // The template text rendered (the model's, or the ChatML fallback).
  const std::string& source() const { return tmpl_.source(); }

  bool is_fallback() const { return fallback_; }
  // Stop strings the fallback needs on vocabularies without ChatML tokens ("<|im_end|>").
  const std::vector<std::string>& extra_stops() const { return extra_stops_; }

 private:
  ChatPrompt(ChatTemplate tmpl, const Tokenizer& tok) : tmpl_(std::move(tmpl)), tok_(&tok) {}
  ChatTemplate tmpl_;
  const Tokenizer* tok_;
  TemplateLimits limits_;
  bool fallback_ = false;
  std::string bos_text_, eos_text_;
  std::vector<std::string> extra_stops_;
};

}  // namespace stet::server
