// The tokenizer and template endpoints: POST /tokenize and /detokenize in
// vLLM's shape and llama.cpp's, GET /tokenizer_info, POST /apply-template.
// Invariant: they answer from the served tokenizer and chat template through
// the same code the generation endpoints use, so /tokenize of a prompt gives
// exactly the ids /v1/completions feeds the engine, /tokenize of messages
// exactly the chat endpoint's prompt, and /apply-template its exact text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "http/api_error.h"
#include "server/openai/chat_prompt.h"
#include "server/openai/request_parse.h"
#include "tokenizer/tokenizer.h"

namespace stet::server {

// What the endpoints read; all of it outlives the request.
struct TokenizerView {
  const Tokenizer& tok;
  const ChatPrompt& chat;
  const ServedModel& model;
  int n_ctx = 0;
  // Bounds checked before any work: text longer than max_text_bytes is
  // refused untokenized (400 context_length_exceeded), and answers
  // with a piece or string per token (with_pieces, return_token_strs) or
  // /detokenize inputs hold at most max_tokens_returned tokens (413 naming it).
  size_t max_text_bytes = SIZE_MAX;
  size_t max_tokens_returned = SIZE_MAX;
};

// {"prompt", "add_special_tokens"=true, "return_token_strs"} or {"messages",
// "add_generation_prompt"=true, "tools"} (vLLM) -> {"count", "max_model_len",
// "tokens", "token_strs"}; {"content", "add_special"=false,
// "parse_special"=true, "with_pieces"} (llama.cpp) -> {"tokens"}, with pieces
// [{"id", "piece"}] (a piece that is not UTF-8 is its byte values).
// `now_unix`: the clock a chat template sees (metadata.stet_clock).
ApiOr<Json> TokenizeBody(const Json& body, const TokenizerView& v, std::optional<int64_t> now_unix);
// {"tokens": [ids]} -> {"prompt": text, "content": text} (vLLM's and llama.cpp's
// names for the same text; special tokens written out). Ids outside the
// vocabulary are a 400.
ApiOr<Json> DetokenizeBody(const Json& body, const TokenizerView& v);
// {"messages", "tools", "add_generation_prompt"=true} -> {"prompt": the exact
// text the chat template renders}.
ApiOr<Json> ApplyTemplateBody(const Json& body, const TokenizerView& v,
                              std::optional<int64_t> now_unix);
// The vocabulary's kind, size and special tokens, the context length, and
// the chat template (its text and SHA-256).
Json TokenizerInfo(const TokenizerView& v, const std::string& template_sha256);

}  // namespace stet::server
