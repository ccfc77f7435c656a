// The bodies of /v1/completions and /v1/chat/completions, parsed as the OpenAI
// API defines them (plus stet's extensions top_k, min_p, repetition_penalty,
// ignore_eos) straight into the engine's RequestParams. Invariant: whatever
// the body holds ends in a request or a 4xx ApiError naming the field. Parsing
// checks JSON types and the API's own policy (limits narrower than the
// engine's); the ranges of the engine's fields are checked once, by the
// engine's ValidateRequest, which BuildParams runs and maps to `param`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "http/api_error.h"
#include "server/generation.h"

namespace stet::server {

constexpr int kMaxStop = 4;
constexpr size_t kMaxStopBytes = 4096;      // per stop string (stet's bound; OpenAI names none)
constexpr int kMaxLogitBias = 1024;         // logit_bias entries (stet's bound)
constexpr size_t kMaxCacheSaltBytes = 256;  // cache_salt (vLLM's prefix-cache scope)
constexpr int kMaxPrompts = 128;
constexpr int kMaxChoicesPerRequest = 256;       // prompts x n
constexpr int kMaxCompletionLogprobs = 5;        // /v1/completions' logprobs (the engine allows 20)
constexpr float kMaxTemperature = 2.0f;          // OpenAI's range is [0, 2]; the engine allows more
constexpr int kCompletionDefaultMaxTokens = 16;  // as OpenAI's /v1/completions

// The names a client may use for the served model.
struct ServedModel {
  std::string id;         // general.name, or the file stem; the first --served-model-name
  std::string file_name;  // "model.Q4_1.gguf"
  std::string file_stem;  // "model.Q4_1"
  // --served-model-name: every name given (the first is `id`), each listed by
  // /v1/models and accepted in requests; answers report `id`.
  std::vector<std::string> aliases;
  bool Matches(const std::string& name) const;
};

// The chat parser's parts that /tokenize, /apply-template and /v1/responses share.
// "messages" normalized for the template (required, non-empty).
std::optional<ApiError> ParseMessages(const Json& body, Json* out);
// Text content into *out: a string, or an array of parts whose texts are joined by "\n";
// each part's kind is judged by `check_type` (its ApiError refuses the part, `pp` naming
// it: "param[i]") before its "text" must be a string. Anything else is refused, the
// message ending in `found` (what the caller says of it). Chat's message content and the
// Responses API's input items both read text so.
std::optional<ApiError> ReadTextContent(
    const Json& content, const std::string& param, const std::string& found,
    const std::function<std::optional<ApiError>(const Json& part, const std::string& pp)>&
        check_type,
    std::string* out);
// "tools" (null when absent or empty).
std::optional<ApiError> ParseTools(const Json& body, Json* out);
// temperature, top_p, top_k, min_p, the penalties, logit_bias and seed.
std::optional<ApiError> ParseSampling(const Json& body, SamplingParams* sp);
// An array of 32-bit token ids (their range is the engine's or the tokenizer's to check).
std::optional<ApiError> ParseTokenIds(const Json& arr, const char* param,
                                      std::vector<int32_t>* out);

// /v1/completions: prompts as text or ids, echo, logprobs (0..5), prompt_logprobs.
ApiOr<GenerationRequest> ParseCompletionRequest(const Json& body, const ServedModel& model);
// /v1/chat/completions: messages (or stet's prompt_token_ids), tools and
// tool_choice, logprobs / top_logprobs, response_format.
ApiOr<GenerationRequest> ParseChatRequest(const Json& body, const ServedModel& model);

// Engine parameters for one prompt: `s.params` with the prompt and max_tokens
// (max_tokens beyond the context is clamped: generation ends with "length"),
// checked by the engine's ValidateRequest. Its refusal becomes a 400 naming
// the field — `prompt_param` for the prompt — and a prompt that leaves no room
// is a 400 context_length_exceeded.
// `default_max_tokens` absent: as many as the context leaves.
ApiOr<RequestParams> BuildParams(const CommonFields& s, std::vector<int32_t> prompt,
                                 const RequestLimits& limits, std::optional<int> default_max_tokens,
                                 const char* prompt_param);

}  // namespace stet::server
