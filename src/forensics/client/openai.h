// The OpenAI wire format as the forensics tools need it: build a /v1/completions
// or /v1/chat/completions request, and read a response (whole or streamed) into
// one Completion — the text, its tokens with logprobs and top alternatives, and
// the system_fingerprint — whichever of the two endpoint shapes produced it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "forensics/client/http_client.h"

namespace stet::forensics {

struct CompletionRequest {
  std::string model;
  std::optional<std::string> prompt;       // /v1/completions
  std::optional<nlohmann::json> messages;  // /v1/chat/completions (an array)
  int max_tokens = 64;
  double temperature = 0.0;
  std::optional<int64_t> seed;
  int top_logprobs = 0;  // 0: do not ask for logprobs
  bool stream = false;
  nlohmann::json extra = nlohmann::json::object();  // merged into the body last

  bool chat() const { return messages.has_value(); }
  std::string Path() const { return chat() ? "chat/completions" : "completions"; }
  nlohmann::json ToJson() const;
};

struct TokenLogprob {
  std::string token;
  double logprob = 0;
  std::vector<std::pair<std::string, double>> top;  // alternatives, as the server sent them
};

struct Completion {
  std::string text;
  std::vector<TokenLogprob> tokens;  // empty when the server sent no logprobs
  bool has_logprobs = false;
  std::string system_fingerprint;  // empty when the server sent none
  std::string finish_reason;
  std::string model;  // as the server names it
  double seconds = 0;
};

// Reads one non-streamed response body (either endpoint shape; choice 0).
Result<Completion> ParseCompletion(const std::string& body);
// Folds one streamed chunk (an SSE event's data) into `acc`.
Status AppendStreamChunk(const std::string& data, Completion* acc);

// Sends `req` to `base_url` with `client` and returns the parsed completion;
// HTTP errors come back as a Status carrying the server's message.
Result<Completion> Complete(HttpClient& client, const std::string& base_url,
                            const CompletionRequest& req);

// Reads a chat "messages" file: a JSON array of {role, content}, or an object
// with a "messages" array.
Result<nlohmann::json> LoadMessagesFile(const std::string& path);

// Whole file as a string, or an IoError naming it.
Result<std::string> ReadTextFile(const std::string& path);
Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace stet::forensics
