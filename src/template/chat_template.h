// Chat templates: stet's own Jinja2 engine, rendering HF chat templates byte
// for byte as transformers' apply_chat_template does (sandboxed environment,
// trim_blocks + lstrip_blocks, loopcontrols, `{% generation %}` passthrough,
// tojson = json.dumps(ensure_ascii=False), raise_exception, strftime_now).
// Invariant: rendering is deterministic and bounded — strftime_now reads a
// fixed instant from the options, and every render runs under a budget
// (TemplateLimits: steps, bytes, output, depth, wall time), so a hostile
// template ends in an error Status, never a hang or gigabytes of memory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace stet {

namespace tmpl {
struct Node;
}

// The render budget. The template is code from whoever made the model file,
// so every render is bounded; the defaults let every template of the corpus
// render a 100-message conversation with tools using under 5% of each limit
// (tests/template/budget_margin_test.cc measures it). Going over any limit ends the
// render with ResourceExhausted naming the limit. All but max_wall_ms are
// deterministic: the same template and context succeed or fail the same way
// on every machine.
struct TemplateLimits {
  // Units of work of about 50 ns each: one per node evaluated and per list
  // element a builtin touches, one per 32 bytes of a byte-at-a-time loop
  // (decoding, escaping) and per 128 bytes copied or searched, so a single
  // huge string operation counts as much as the work it does.
  uint64_t max_steps = 10'000'000;
  // The rendered text, and any single string or list value the render builds.
  size_t max_output_bytes = 32u << 20;
  // Bytes of strings, lists, dicts and output the render holds at once (its
  // peak memory, less the context it was given). Anything large is checked
  // before it is allocated, temporaries included.
  size_t max_memory_bytes = 256u << 20;
  int64_t max_loop_iterations = 1'000'000;  // for-loop iterations and filter passes, summed
  int max_call_depth = 100;                 // nested macro calls
  int max_eval_depth = 1000;                // nested expression / statement evaluation
  // Wall-clock backstop, polled every few thousand steps; 0 = none. The
  // deterministic limits above stop every known hostile template long before.
  int64_t max_wall_ms = 10'000;
  // The template's own text, checked by Parse: the largest real template is
  // 17 KB, and a parsed template takes ~100x its size in memory.
  size_t max_source_bytes = 1u << 20;
};

// What one render used (filled in whether it succeeded or not).
struct TemplateUsage {
  uint64_t steps = 0;
  uint64_t peak_memory_bytes = 0;  // against max_memory_bytes
  uint64_t created_bytes = 0;      // every value and output byte created, summed (work, not memory)
  uint64_t output_bytes = 0;
  int64_t loop_iterations = 0;
  double seconds = 0;
};

struct ChatTemplateOptions {
  // The instant strftime_now() formats, as Unix seconds read in UTC (the
  // template sees a naive datetime, so %z / %Z are empty). The default is
  // 2024-07-26 12:00:00: strftime_now("%d %b %Y") == "26 Jul 2024".
  int64_t now_unix = 1721995200;
  TemplateLimits limits;
  // Polled with the wall clock: returning true stops the render with
  // Cancelled (e.g. the client that asked for it has gone).
  std::function<bool()> cancelled;
  TemplateUsage* usage = nullptr;  // when set, receives what the render used
};

class ChatTemplate {
 public:
  // Lexes and parses; syntax errors (and unknown filters / tests outside an
  // `if`) come back as InvalidArgument with "line L, column C", a source
  // longer than limits.max_source_bytes as ResourceExhausted.
  static Result<ChatTemplate> Parse(std::string_view source, const TemplateLimits& limits = {});

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
  explicit ChatTemplate(std::shared_ptr<const Compiled> compiled)
      : compiled_(std::move(compiled)) {}
  template <typename Json>
  Result<std::string> RenderImpl(const Json& context, const ChatTemplateOptions& options) const;
  std::shared_ptr<const Compiled> compiled_;
};

// The variables transformers' apply_chat_template renders with, in its order: messages,
// tools, documents (null), add_generation_prompt, bos_token, eos_token.
nlohmann::ordered_json ChatTemplateContext(const nlohmann::ordered_json& messages,
                                           const nlohmann::ordered_json& tools,
                                           bool add_generation_prompt, const std::string& bos_token,
                                           const std::string& eos_token);

// transformers' apply_chat_template(messages, tools=tools, add_generation_prompt=...,
// tokenize=False): renders with messages, tools (null when there are none),
// documents = null, add_generation_prompt, bos_token, eos_token and the keys
// of `extra` (an object, or null), which override the others. (Overloads, not
// a defaulted `extra`: a default json argument would need the full json header.)
Result<std::string> ApplyChatTemplate(std::string_view tmpl, const nlohmann::json& messages,
                                      const nlohmann::json& tools, bool add_generation_prompt,
                                      const std::string& bos_token, const std::string& eos_token);
Result<std::string> ApplyChatTemplate(std::string_view tmpl, const nlohmann::json& messages,
                                      const nlohmann::json& tools, bool add_generation_prompt,
                                      const std::string& bos_token, const std::string& eos_token,
                                      const nlohmann::json& extra);
Result<std::string> ApplyChatTemplate(std::string_view tmpl, const nlohmann::ordered_json& messages,
                                      const nlohmann::ordered_json& tools,
                                      bool add_generation_prompt, const std::string& bos_token,
                                      const std::string& eos_token,
                                      const nlohmann::ordered_json& extra,
                                      const ChatTemplateOptions& options = {});

// transformers' apply_chat_template(..., continue_final_message=True) after
// the render (with add_generation_prompt false): `rendered` cut just after
// the last occurrence of the final message's text, so whatever the template
// writes after it (the end of turn) is dropped and the model continues the
// message. `final_text` is that message's text (its last text part when the
// content is a list). InvalidArgument when it is blank or the render does
// not contain it (a template that rewrites the message).
Result<std::string> ContinueFinalMessage(std::string rendered, std::string_view final_text);

// strftime_now(format) at `unix_seconds` (read in UTC), as templates see it:
// what stet passes as date_string ("%d %b %Y") uses the same clock.
std::string StrftimeUtc(std::string_view format, int64_t unix_seconds);

}  // namespace stet
