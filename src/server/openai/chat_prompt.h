// Chat messages -> prompt token ids: the model's own chat template
// (tokenizer.chat_template in the GGUF), or, when the file has none, the
// built-in template of its family (template/builtin_templates.h), rendered by
// stet's Jinja engine with the request's options (ChatPromptOptions).
// Invariants: the BOS token appears once — when the rendered text already
// starts with it (most templates write it), tokenization adds none; every
// render runs under the TemplateLimits given at Create, and a template that
// breaks them on a small test conversation is refused at Create; the render
// is a pure function of (template, messages, tools, options) — the clock
// included — so a replay with the recorded clock renders the same bytes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "http/api_error.h"
#include "template/builtin_templates.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace stet::server {

// How one request's conversation is rendered (vLLM's and transformers' names).
struct ChatPromptOptions {
  // Extra template variables: null, or an object whose keys become variables
  // (Qwen 3's enable_thinking, reasoning_effort, date_string, ...). Over the
  // server's --chat-template-kwargs, key by key. The names the render sets
  // itself (kReservedTemplateKwargs) are refused.
  Json chat_template_kwargs;
  bool add_generation_prompt = true;
  // Leave the final message open (no end of turn after it) so the model
  // continues it: a prefill. add_generation_prompt must then be false.
  bool continue_final_message = false;
  // The instant strftime_now() formats, and date_string (llama.cpp's name,
  // which Llama 3.x templates read for "Today Date"), as Unix seconds read in
  // UTC. The default is the engine's fixed instant; the server passes
  // TemplateClock(...).
  int64_t now_unix = ChatTemplateOptions{}.now_unix;
};

// The variables a render sets itself; chat_template_kwargs may not name them.
extern const char* const kReservedTemplateKwargs[9];

// A request's options, from its body: `chat_template_kwargs` (object or
// null), `add_generation_prompt` (default true), `continue_final_message`
// (default false; when true, add_generation_prompt defaults to false and an
// explicit true with it is refused, as vLLM refuses it). 400s name the field.
ApiOr<ChatPromptOptions> ReadChatPromptOptions(const Json& body, int64_t now_unix);
// Checks what any caller built: kwargs an object (or null) naming no reserved
// variable, not both add_generation_prompt and continue_final_message.
std::optional<ApiError> CheckChatPromptOptions(const ChatPromptOptions& options);

// The instant a request's template sees: `pinned` (the client's
// metadata.stet_clock, or the recorded clock under replay) when given, else
// the wall clock now, in whole seconds.
int64_t TemplateClock(std::optional<int64_t> pinned);

// What ChatPrompt::Create reads from the model and the command line.
struct ChatPromptSetup {
  std::string source;        // the template text; empty: the family's built-in
  std::string architecture;  // general.architecture, for choosing the built-in
  std::string model_name;    // general.name / general.basename, likewise
  TemplateLimits limits;
  Json default_kwargs;  // the server's --chat-template-kwargs (null or an object)
};

class ChatPrompt {
 public:
  // Parse errors in the template are returned, and so is a limit the
  // template exceeds on LoadCheck, or default kwargs CheckChatPromptOptions refuses.
  static Result<ChatPrompt> Create(const ChatPromptSetup& setup, const Tokenizer& tokenizer);
  // `source` empty: the built-in chosen from the tokenizer alone.
  static Result<ChatPrompt> Create(const std::string& source, const Tokenizer& tokenizer,
                                   const TemplateLimits& limits = {});

  // Renders `source` once against small fixed conversations (with and without
  // tools) under `limits`: ResourceExhausted naming the limit when it breaks
  // one. Other template errors (raise_exception on roles it does not support)
  // are not the check's concern and pass.
  static Status LoadCheck(const ChatTemplate& tmpl, const TemplateLimits& limits);

  // Renders and tokenizes (special-token text becomes its ids). `rendered` gets the text.
  // A template error is a 400 (code template_limit_exceeded when it broke a limit).
  // A rendered text over `max_bytes` is a 400 context_length_exceeded, found
  // before it is tokenized (the caller's bound: no longer text fits the context).
  ApiOr<std::vector<int32_t>> Build(const Json& messages, const Json& tools,
                                    const ChatPromptOptions& options,
                                    std::string* rendered = nullptr,
                                    size_t max_bytes = SIZE_MAX) const;
  // Build's two halves, for /apply-template and /tokenize: the rendered text,
  // and its tokens exactly as Build makes them.
  ApiOr<std::string> Render(const Json& messages, const Json& tools,
                            const ChatPromptOptions& options) const;
  std::vector<int32_t> Tokenize(const std::string& rendered) const;

  // The same with default options at `now_unix` (absent: the fixed instant).
  ApiOr<std::vector<int32_t>> Build(const Json& messages, const Json& tools,
                                    std::string* rendered = nullptr,
                                    std::optional<int64_t> now_unix = std::nullopt,
                                    size_t max_bytes = SIZE_MAX) const;
  ApiOr<std::string> Render(const Json& messages, const Json& tools,
                            std::optional<int64_t> now_unix = std::nullopt,
                            bool add_generation_prompt = true) const;

  // The template text rendered (the model's, or the built-in).
  const std::string& source() const { return tmpl_.source(); }
  // True when the file had no template and a built-in is used; builtin_name()
  // says which ("gemma", ...), builtin_reason() why it was chosen.
  bool is_fallback() const { return !builtin_.empty(); }
  const std::string& builtin_name() const { return builtin_; }
  const std::string& builtin_reason() const { return builtin_reason_; }
  // {"builtin": bool, "name": the built-in's name or null} for /v1/models and /tokenizer_info.
  Json Describe() const;
  // Stop strings a built-in needs where its end of turn is no end-of-generation token.
  const std::vector<std::string>& extra_stops() const { return extra_stops_; }

 private:
  ChatPrompt(ChatTemplate tmpl, const Tokenizer& tok) : tmpl_(std::move(tmpl)), tok_(&tok) {}
  Json Context(const Json& messages, const Json& tools, const ChatPromptOptions& options) const;
  ChatTemplate tmpl_;
  const Tokenizer* tok_;
  TemplateLimits limits_;
  std::string builtin_, builtin_reason_;
  std::string bos_text_, eos_text_;
  Json default_kwargs_;
  std::vector<std::string> extra_stops_;
};

}  // namespace stet::server
