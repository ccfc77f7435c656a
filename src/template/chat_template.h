// Chat templates: stet's own Jinja2 engine, rendering HF chat templates byte
// for byte as transformers' apply_chat_template does (sandboxed environment,
// trim_blocks + lstrip_blocks, loopcontrols, `{% generation %}` passthrough,
// tojson = json.dumps(ensure_ascii=False), raise_exception, strftime_now).
// Invariant: rendering is deterministic and bounded — strftime_now reads a
// fixed instant from the options, and output size, loop iterations, macro and
// evaluation depth are capped, so hostile templates end in an error Status.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace stet {

namespace tmpl {
struct Node;
}

struct ChatTemplateOptions {
  // The instant strftime_now() formats, as Unix seconds read in UTC (the
  // template sees a naive datetime, so %z / %Z are empty). The default is
  // 2024-07-26 12:00:00: strftime_now("%d %b %Y") == "26 Jul 2024".
  int64_t now_unix = 1721995200;
  size_t max_output_bytes = 64u << 20;   // the rendered text, and any one string
  size_t max_work_bytes = 1u << 30;      // bytes appended to all buffers, summed
  int64_t max_loop_iterations = 1'000'000;
  int max_call_depth = 100;    // nested macro calls
  int max_eval_depth = 1000;   // nested expression / statement evaluation
};

class ChatTemplate {
 public:
  // Lexes and parses; syntax errors (and unknown filters / tests outside an
  // `if`) come back as InvalidArgument with "line L, column C".
  static Result<ChatTemplate> Parse(std::string_view source);

  // `context` must be an object; its keys become template variables
  // (messages, tools, add_generation_prompt, bos_token, eos_token, ...). Use
  // nlohmann::ordered_json to keep key order: tojson prints dicts in the
  // order they hold, as Python does, and nlohmann::json sorts keys.
  Result<std::string> Render(const nlohmann::json& context,
                             const ChatTemplateOptions& options = {}) const;
  Result<std::string> Render(const nlohmann::ordered_json& context,
                             const ChatTemplateOptions& options = {}) const;

  const std::string& source() const;

 private:
  struct Compiled;
  explicit ChatTemplate(std::shared_ptr<const Compiled> compiled) : compiled_(std::move(compiled)) {}
  template <typename Json>
  Result<std::string> RenderImpl(const Json& context, const ChatTemplateOptions& options) const;
  std::shared_ptr<const Compiled> compiled_;
};

// transformers' apply_chat_template(messages, tools=tools, add_generation_prompt=...,
// tokenize=False): renders with messages, tools (null when there are none),
// documents = null, add_generation_prompt, bos_token, eos_token and the keys
// of `extra` (an object, or null), which override the others.
Result<std::string> ApplyChatTemplate(std::string_view tmpl, const nlohmann::json& messages,
                                      const nlohmann::json& tools, bool add_generation_prompt,
                                      const std::string& bos_token, const std::string& eos_token,
                                      const nlohmann::json& extra = {});
Result<std::string> ApplyChatTemplate(std::string_view tmpl, const nlohmann::ordered_json& messages,
                                      const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                      const std::string& bos_token, const std::string& eos_token,
                                      const nlohmann::ordered_json& extra,
                                      const ChatTemplateOptions& options = {});

}  // namespace stet
