// libFuzzer target for the chat-template engine: arbitrary bytes are parsed
// as a template and rendered against a small chat context (or, after a NUL
// byte, against the rest of the input read as a JSON context). Any outcome is
// fine except a crash, a sanitizer report, a hang, an exception escaping the
// API, or a render that succeeds past its budget. The budget is small (200k
// steps, 16 MiB) and has no wall clock, so no input can run long: a slow unit
// (-timeout) means some builtin does work it is not charged for.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "template/chat_template.h"

namespace {

const nlohmann::ordered_json& DefaultContext() {
  static const auto* ctx = new nlohmann::ordered_json(nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": "Hi \u00e9 \ud83d\ude00"},
      {"role": "assistant", "content": "", "reasoning_content": "think",
       "tool_calls": [{"id": "call0A1b2", "type": "function",
                       "function": {"name": "f", "arguments": {"x": 1, "y": [true, null, 2.5]}}}]},
      {"role": "tool", "tool_call_id": "call0A1b2", "content": "{\"ok\": 1}"},
      {"role": "user", "content": [{"type": "text", "text": "more"}]}
    ],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
               "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}],
    "documents": null, "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"
  })"));
  return *ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view source = input;
  nlohmann::ordered_json custom;
  bool use_custom = false;
  size_t nul = input.find('\0');
  if (nul != std::string_view::npos) {
    source = input.substr(0, nul);
    custom =
        nlohmann::ordered_json::parse(input.substr(nul + 1), nullptr, /*allow_exceptions=*/false);
    use_custom = custom.is_object();
  }
  stet::ChatTemplateOptions o;
  o.limits.max_steps = 200'000;
  o.limits.max_output_bytes = 1 << 20;
  o.limits.max_memory_bytes = 16 << 20;
  o.limits.max_loop_iterations = 20000;
  o.limits.max_wall_ms = 0;  // deterministic: libFuzzer's -timeout catches what the steps miss
  stet::TemplateUsage usage;
  o.usage = &usage;
  stet::Result<stet::ChatTemplate> t = stet::ChatTemplate::Parse(source, o.limits);
  if (!t.ok()) return 0;
  stet::Result<std::string> out = t->Render(use_custom ? custom : DefaultContext(), o);
  if (out.ok() && (out->size() > o.limits.max_output_bytes || usage.steps > o.limits.max_steps ||
                   usage.peak_memory_bytes > o.limits.max_memory_bytes)) {
    __builtin_trap();
  }
  return 0;
}
