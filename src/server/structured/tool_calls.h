// Tool calls in the format a chat template teaches. Each format is one object
// (server/structured/tool_format_*.cc) that owns its detection from the
// template text, its stop strings, the root of the grammar that forces a call
// and its parser; the registry (tool_formats.cc) lists them in detection
// order, the generic JSON format last. Invariants: an answer that is not
// entirely well-formed calls (bad JSON, an unknown function, text after a
// call) comes back as text, never an error; call ids depend only on (seed,
// choice, call index), so a replay gives the same ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "http/api_error.h"
#include "wire/answer.h"

namespace stet::server {

// The wire's call (wire/answer.h): its id is ToolCallId(seed, choice,
// index), its name one of the request's functions, its arguments a JSON
// object as compact text.
using wire::ToolCall;
using wire::ToolCallsJson;

struct ParsedAnswer {
  std::string content;  // text before the calls (trimmed), or the whole text when there are none
  std::vector<ToolCall> calls;
  // The reasoning block's text (server/structured/answer_split.h), when the answer has one.
  std::optional<std::string> reasoning;
  int64_t reasoning_tokens = 0;  // the tokens up to the block's end
};

class ToolCallFormat {
 public:
  virtual ~ToolCallFormat() = default;
  // Its name in logs and docs ("hermes").
  virtual const char* name() const = 0;
  // True when a chat template's text teaches this format.
  virtual bool Detects(const std::string& template_source) const = 0;
  // A fragment of a template that teaches it: the registry test checks that
  // Detects() holds on it and that no earlier row claims it.
  virtual std::string TemplateSample() const = 0;
  // Stop strings generation needs with this format, beyond the template's
  // end-of-turn tokens. None of today's formats needs one: a call ends where
  // the model's turn does.
  virtual std::vector<std::string> StopStrings() const { return {}; }
  // The member holding a call's arguments in the forced grammar ("arguments";
  // Llama 3.x writes "parameters").
  virtual const char* ArgumentsKey() const { return "arguments"; }
  // The forced grammar's root over the rule `call` (one call object); `many`:
  // one call or more. `ws` is the bounded-blanks rule.
  virtual std::string ForcedRoot(bool many, const std::string& ws) const = 0;
  // The calls the whole answer `raw` (special tokens written out) holds,
  // appended to `calls`; `*first`: where they start (what precedes them is
  // content). False unless the answer after `*first` is calls and blanks only.
  virtual bool Parse(const std::string& raw, const Json& tools, std::vector<ToolCall>* calls,
                     size_t* first) const = 0;
  // Streaming: where a call could begin in an answer that starts with `raw`
  // (special tokens written out) — no call starts before the offset returned
  // — or npos when no continuation of `raw` can be calls. What precedes the
  // offset is content whatever follows.
  virtual size_t CallBound(const std::string& raw) const = 0;
  // `calls` written as a model of this format writes them (what the forced
  // grammar accepts and Parse reads back: the registry test's round trip).
  virtual std::string Write(const std::vector<ToolCall>& calls) const = 0;
};

// Every format, in detection order (the first whose Detects() holds wins; the generic one last).
const std::vector<const ToolCallFormat*>& ToolCallFormats();
const ToolCallFormat& DetectToolCallFormat(const std::string& template_source);
// The format of that name; null when there is none.
const ToolCallFormat* FindToolCallFormat(const std::string& name);

// `raw`: the answer with special tokens written out (markers such as
// <|python_tag|> and [TOOL_CALLS] are control tokens); `text`: the answer as
// content (special tokens dropped), returned unchanged when there are no
// calls. `tools`: the request's tools array (calls must name one of them).
ParsedAnswer ParseToolCalls(const ToolCallFormat& f, const std::string& raw,
                            const std::string& text, const Json& tools, uint64_t seed, int choice);

// The GBNF that forces tool calls in format `f`: a call of any of `tools`
// (`name` empty) or of the function `name`, whose arguments match its
// parameters schema; several calls (for "required") only with `parallel`.
// With `text_schema`: calls, or else a JSON document valid under it.
Result<std::string> ToolCallGbnf(const ToolCallFormat& f, const Json& tools,
                                 const std::string& name, bool parallel,
                                 const Json* text_schema = nullptr);

// "call_" + 24 hex digits mixed from (seed, choice, index).
std::string ToolCallId(uint64_t seed, int choice, int index);

}  // namespace stet::server
