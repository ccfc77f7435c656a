// The bodies of /v1/completions and /v1/chat/completions, parsed and validated
// as the OpenAI API defines them (plus stet's extensions top_k, min_p,
// repetition_penalty, ignore_eos). Invariant: parsing needs no model and no
// network, and whatever the body holds ends in a request or a 4xx ApiError;
// BuildParams then checks what needs the vocabulary and the context length.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/api_error.h"

namespace stet::server {

constexpr int kMaxStop = 4;
constexpr int kMaxN = 128;
constexpr int kMaxPrompts = 128;
constexpr int kMaxChoicesPerRequest = 256;  // prompts x n
constexpr int kMaxCompletionLogprobs = 5;
constexpr int kMaxTopLogprobs = 20;

// The names a client may use for the served model.
struct ServedModel {
  std::string id;         // general.name, or the file stem
  std::string file_name;  // "model.Q4_1.gguf"
  std::string file_stem;  // "model.Q4_1"
  bool Matches(const std::string& name) const;
};

// Fields shared by both endpoints.
struct SamplingFields {
  std::optional<int> max_tokens;  // absent: the endpoint's default
  int n = 1;
  float temperature = 1.0f;
  float top_p = 1.0f;
  int top_k = 0;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::map<int32_t, float> logit_bias;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;
  std::string user;
};

struct PromptInput {
  bool is_text = true;
  std::string text;          // is_text
  std::vector<int32_t> ids;  // !is_text (checked against the vocabulary later)
};

struct CompletionRequest {
  std::string model;
  std::vector<PromptInput> prompts;
  SamplingFields s;
  bool echo = false;
  std::optional<int> logprobs;  // 0..5: tokens + that many alternatives per token
};

struct ChatRequest {
  std::string model;
  // Normalized for the template: [{role, content (string), name?, tool_calls?, tool_call_id?}].
  Json messages;
  Json tools;  // null when none
  SamplingFields s;
  bool logprobs = false;
  int top_logprobs = 0;
};

ApiOr<CompletionRequest> ParseCompletionRequest(const Json& body, const ServedModel& model);
ApiOr<ChatRequest> ParseChatRequest(const Json& body, const ServedModel& model);

struct ModelLimits {
  int n_vocab = 0;
  int n_ctx = 0;  // positions per sequence: prompt + generated
};

// Engine parameters for one prompt. max_tokens beyond the context is clamped
// (generation ends with "length"); a prompt that leaves no room is a 400
// context_length_exceeded naming `prompt_param`.
ApiOr<RequestParams> BuildParams(const SamplingFields& s, std::vector<int32_t> prompt,
                                 const ModelLimits& limits, int default_max_tokens,
                                 const char* prompt_param);

}  // namespace stet::server
