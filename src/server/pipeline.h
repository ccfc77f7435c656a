// The model-side half of serving one generation, without HTTP: a
// GenerationRequest made ready for the engine (the forced tool-call grammar,
// the template's stop strings, the prompt rendered and tokenized under its
// bounds, one RequestParams per prompt checked by the engine), the answer's
// tool parser and the record of what shaped it. Serve (server/serve.cc) runs
// these for every generation endpoint; a caller without a server (a Python
// binding) can run the same steps, then submit, fold (server/job.h) and
// write (server/openai/wire_format.h). Invariant: a request's prompt ids and
// parameters depend only on the request and the model, never on the endpoint
// that carried it beyond what the request says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/engine.h"
#include "http/api_error.h"
#include "server/generation.h"
#include "server/openai/chat_prompt.h"
#include "server/openai/response.h"
#include "server/record_builder.h"
#include "server/structured/tool_calls.h"

namespace stet::server {

// What serving needs of the model; all of it outlives the requests.
struct ServeModel {
  const Engine* engine = nullptr;
  const ChatPrompt* chat = nullptr;
  const ToolCallFormat* tool_format = nullptr;  // the template's
  // A prompt text longer than this cannot fit the context whatever it holds
  // (n_ctx x the longest token's bytes): it is refused before tokenizing.
  size_t max_prompt_bytes = SIZE_MAX;
  std::string model_id;         // the served model's id (responses, records)
  std::string template_sha256;  // of chat->source(), for records
  // --reasoning-format: the tags of the reasoning block chat answers are split
  // at (reasoning_content, reasoning items); none: the block stays inline.
  std::optional<ReasoningSyntax> reasoning;
};

// A 400 context_length_exceeded when a prompt text of `bytes` cannot fit.
std::optional<ApiError> CheckPromptBytes(const ServeModel& m, size_t bytes, const char* param);

// The engine requests of `g`, cheapest refusal first: the forced tool-call
// grammar, each text prompt's length, then the render and the tokens.
// `keep_rendered`: the template's output is kept (for a record).
ApiOr<PreparedPrompts> Prepare(const ServeModel& m, GenerationRequest& g, bool keep_rendered);

// A token's bytes (Tokenizer::TokenToPiece).
PieceFn Piece(const ServeModel& m);
// What the collector folds into ChoiceResult::raw: each token's piece with
// special tokens written out, for requests that read tool calls; else null.
PieceFn RawPiece(const ServeModel& m, const GenerationRequest& g);
// An answer's parts: its reasoning block (chat and Responses, with
// m.reasoning) and its tool calls, in the template's format (with
// g.tools.parse); null when it reads neither.
ToolParseFn ToolParser(const ServeModel& m, const GenerationRequest& g, const PreparedPrompts& p);
// The parts certain while it streams; null when ToolParser is.
SafePartsFn SafeParser(const ServeModel& m, const GenerationRequest& g, const PreparedPrompts& p);
// Both for a syntax already made (`raw` is read with s.format, else the text);
// a reasoning block's tokens are counted up to the one that closes it.
ToolParseFn AnswerParser(std::shared_ptr<const AnswerSyntax> s);
SafePartsFn AnswerPrefix(std::shared_ptr<const AnswerSyntax> s);

// Who received a request, and when (the record's identity).
struct RecordOrigin {
  const Json& body;  // the request as received
  std::string id;    // the response id
  std::string received_at;
};
// The record of `g` (--record): the model's identity, the request, its
// parameters and prompts (and, templated, the clock, the template's hash and
// the rendered prompt, moved out of `p`).
RecordFn MakeRecordFn(const ServeModel& m, const GenerationRequest& g, PreparedPrompts& p,
                      const RecordOrigin& origin);

}  // namespace stet::server
