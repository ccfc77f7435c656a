// A generation request as stet serves it, whichever wire shape asked for it:
// /v1/completions, /v1/chat/completions and /v1/responses each parse into one
// GenerationRequest (server/openai/request_parse.h, responses_api.h), and
// every one of them is then served by the same path (server/pipeline.h:
// render, tokenize, engine parameters, record; server/serve.cc: admission,
// submit, stream, answer). It names no HTTP type, so a caller without a
// server (a Python binding) can build one and use the same path.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "http/api_error.h"
#include "server/openai/chat_prompt.h"

namespace stet::server {

// The wire shape that asked, and that the answer is written in.
enum class WireApi { kCompletions, kChat, kResponses };
const char* WirePath(WireApi api);  // "/v1/completions", ... (what records name)

// Fields every generation shares.
struct CommonFields {
  // As the body sets them: n, sampling (seed included), stop, ignore_eos,
  // top_logprobs, prompt_logprobs, grammar; prompt and max_tokens are filled
  // per prompt by BuildParams.
  RequestParams params;
  std::optional<int> max_tokens;  // absent: the endpoint's default
  bool stream = false;
  bool include_usage = false;
  std::string user;
  std::string cache_salt;  // empty: none; scopes prefix-cache hits to requests that send it
};

// One prompt given without a template: text (tokenized with BOS, special-token
// text parsed) or token ids (checked against the vocabulary by the engine).
struct PromptInput {
  bool is_text = true;
  std::string text;          // is_text
  std::vector<int32_t> ids;  // !is_text
};

// The request's function tools.
struct ToolUse {
  Json tools;  // chat's nested shape, for the template and the parser; null when none
  // tool_choice "required" ("*") or a named function: the answer is forced to
  // be calls in the template's format (a grammar); "" when the model chooses.
  std::string forced;
  bool parallel = true;  // parallel_tool_calls
  bool parse = false;    // tools given and tool_choice not "none": answers are read for calls
};

// What the answer carries besides the text.
struct OutputOptions {
  // Per generated token its logprob and this many alternatives (completions'
  // `logprobs`, chat's `top_logprobs` with `logprobs`, the Responses API's
  // include + top_logprobs); absent: none.
  std::optional<int> logprobs;
  bool echo = false;                   // completions: the prompt text before the answer
  std::optional<int> prompt_logprobs;  // vLLM's: every prompt token's logprob and k alternatives
  bool return_token_ids = false;       // stet's: the prompt's and the answer's token ids
};

struct GenerationRequest {
  WireApi api = WireApi::kCompletions;
  // The prompt: a conversation the chat template renders (`messages` not
  // null), else `prompts`, one engine request each (chat's prompt_token_ids is
  // one prompt of ids).
  Json messages;  // normalized: [{role, content (string), name?, tool_calls?, tool_call_id?}]
  std::vector<PromptInput> prompts;
  const char* prompt_param = "prompt";  // the field an error about the prompt names
  CommonFields s;
  // max_tokens when the body sets none; absent: as many as the context leaves.
  std::optional<int> default_max_tokens;
  ToolUse tools;
  // response_format / text.format as a JSON Schema (json_object: any object);
  // null when text is free. With tools it constrains the text turns only: a
  // forced call this turn, or calls or text in the format (tool_choice auto).
  Json text_schema;
  OutputOptions out;
  // What the wire shape repeats back as the client gave it (the Responses
  // object's instructions, metadata, tools, tool_choice, text.format,
  // temperature, top_p, max_output_tokens); null for the other shapes.
  Json echo;
  // How the chat template renders `messages`: chat_template_kwargs,
  // add_generation_prompt, continue_final_message (its now_unix is set from
  // `clock` when the prompt is prepared).
  ChatPromptOptions template_options;
  // The instant the chat template's strftime_now() sees (metadata.stet_clock,
  // or the recorded clock under replay); absent: the wall clock when prepared.
  std::optional<int64_t> clock;
  bool seed_generated = false;  // the client sent no seed: the server drew s.params.sampling.seed

  // Rendered by the chat template (its stop strings apply, records carry its clock).
  bool templated() const { return api != WireApi::kCompletions; }
};

// A request made ready for the engine (server/pipeline.h): one RequestParams
// per prompt, and what the answer and the record need of the prompts.
struct PreparedPrompts {
  std::vector<RequestParams> params;
  std::vector<std::string> echo_text;            // per prompt, with out.echo
  std::vector<std::vector<int32_t>> prompt_ids;  // per prompt, with out.return_token_ids
  std::string rendered;                          // the template's output, when kept for a record
  int64_t clock_unix = 0;                        // what strftime_now() saw (templated)
  bool reasoning_open = false;  // the rendered prompt ends inside a reasoning block
};

}  // namespace stet::server
