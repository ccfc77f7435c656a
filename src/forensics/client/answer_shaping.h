// What `stet proxy` and its replay need of an exchange beyond reading its
// answer (wire/answer.h, wire/stream_fold.h): the snapshot of the parts of a
// request that shape an answer (system turns, instructions, tools,
// tool_choice, response formats), its canonical text, and removing the
// logprobs the proxy asked for on the client's behalf. Pure functions of JSON.
#pragma once

#include <string>

#include "wire/json_read.h"

namespace stet::forensics {

using WireJson = wire::Json;

// Sets choices[*].logprobs to null in a chat/completions answer or chunk (what
// an endpoint sends when none were asked for). True when something changed.
bool StripChoiceLogprobs(WireJson& answer);

// The parts of a request that shape the answer besides the user's turn: system
// and developer messages, `instructions`, tool schemas, tool_choice,
// response_format (`text.format` for responses). Null when the request has none.
WireJson AnswerShapingSnapshot(const WireJson& request);
// Canonical text: object keys sorted, no spaces (the snapshot's SHA-256 is taken over it).
std::string CanonicalJson(const WireJson& j);

}  // namespace stet::forensics
