// /v1/completions' answer: the text_completion body (echo, legacy logprobs,
// prompt_logprobs, token ids) and its SSE chunks, behind WireFormat.
// Invariant: a stream's texts concatenate to the body's (echo included), and
// its logprobs' text offsets follow the streamed text.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/openai/wire_format.h"

namespace stet::server {

// The body. `echo[i]` is the text prepended to choice i (empty without echo).
Json CompletionResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                        const std::vector<std::string>& echo, std::optional<int> logprobs,
                        const UsageCounts& usage, const PieceFn& piece);

// SSE chunks of one /v1/completions stream.
class CompletionStream {
 public:
  CompletionStream(ResponseMeta meta, int n_choices, std::optional<int> logprobs,
                   bool include_usage, PieceFn piece);
  // The echoed prompt (and its logprobs), first chunk of a choice.
  std::string Echo(int index, const std::string& text, const std::vector<TokenOut>& prompt_tokens);
  // A generated token; `tok` null when it is not shown (end marker). "" when there is nothing to
  // send.
  std::string Token(int index, const std::string& text_delta, const TokenOut* tok);
  std::string Finish(int index, const std::string& text_delta, FinishReason why);
  std::string Usage(const UsageCounts& u);  // "" unless include_usage
  // Without echo: a chunk with no text carrying the prompt's prompt_logprobs.
  std::string PromptScores(int index, const std::vector<TokenOut>& prompt_tokens);

  // return_token_ids: every chunk's choice carries "token_ids" (the ids its
  // text came from), a choice's first chunk "prompt_token_ids" (`prompts[i / n]`).
  void SetTokenIds(std::vector<std::vector<int32_t>> prompts, int n);
  // prompt_logprobs: k: the echo chunk (or PromptScores) carries "prompt_logprobs".
  void SetPromptLogprobs(int k) { prompt_logprobs_ = k; }

 private:
  Json Chunk(int index, const std::string& text, Json logprobs, Json finish,
             const TokenOut* tok = nullptr);
  ResponseMeta meta_;
  std::optional<int> logprobs_;
  bool include_usage_;
  PieceFn piece_;
  std::vector<size_t> offset_;  // bytes of text sent per choice
  std::optional<int> prompt_logprobs_;
  bool token_ids_ = false;
  std::vector<std::vector<int32_t>> prompts_;
  int n_ = 1;
  std::vector<bool> prompt_sent_;  // per choice: prompt_token_ids sent
};

class CompletionsFormat final : public WireFormat {
 public:
  // `echo_text`: per prompt (empty without echo); `n_prompts`: the engine requests.
  CompletionsFormat(FormatContext c, std::vector<std::string> echo_text, size_t n_prompts);
  Json Body(const std::vector<ChoiceResult>& choices, const UsageCounts& usage) override;
  // Without logprobs the echoes go first; with them each waits for its prompt's scores.
  std::string Begin() override;
  std::string End(const std::vector<ChoiceResult>&, const UsageCounts& usage) override {
    return stream_.Usage(usage);
  }

 protected:
  std::string PromptScored(const StreamStep& s) override;
  std::string Token(const StreamStep& s) override;
  std::string Finished(const StreamStep& s) override;

 private:
  FormatContext c_;
  std::vector<std::string> echo_text_;  // per prompt
  CompletionStream stream_;
};

}  // namespace stet::server
