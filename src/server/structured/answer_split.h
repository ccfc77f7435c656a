// An answer's parts — a reasoning block (<think>…</think>, as Qwen 3 and
// DeepSeek R1 write it), content, tool calls — read from the whole answer (the
// non-streamed body) or from a prefix while it streams. Invariant: the parts
// read from any prefix are prefixes of the parts read from the whole answer,
// so a stream that sends them as they grow folds into the body byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/structured/tool_calls.h"

namespace stet::server {

struct ReasoningSyntax {
  std::string open = "<think>", close = "</think>";
  // The prompt ends inside an open block (DeepSeek R1's generation prompt, an
  // assistant prefill): the answer starts as reasoning.
  bool starts_inside = false;
};

// How a request's answers are read.
struct AnswerSyntax {
  const ToolCallFormat* format = nullptr;  // null: no tool calls are read
  Json tools;                              // the request's tools, with `format`
  uint64_t seed = 0;                       // for call ids
  std::optional<ReasoningSyntax> reasoning;
};

// The parts of a prefix that are certain whatever follows.
struct SafeParts {
  std::string reasoning;
  std::string content;
  bool block = false;  // the answer certainly has a reasoning block
};

// `raw`: the answer with special tokens written out (with `format`; else pass
// `text`); `text`: the answer as content. The reasoning block (when the
// answer opens one, or the prompt left one open) is cut out first: its text
// is `reasoning`, what follows its close tag (blanks skipped) is read for
// calls, or is the content. An unclosed block is all reasoning.
ParsedAnswer SplitAnswer(const AnswerSyntax& s, const std::string& raw, const std::string& text,
                         int choice);
SafeParts SafePrefix(const AnswerSyntax& s, const std::string& raw, const std::string& text);

// True when the rendered prompt ends inside an open reasoning block of `r`.
bool EndsInsideReasoning(const ReasoningSyntax& r, const std::string& prompt);

}  // namespace stet::server
