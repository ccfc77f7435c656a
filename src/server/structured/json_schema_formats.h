// JSON Schema `format` as grammars: each format a validator checks becomes a
// grammar for a subset of its strings that every common validator accepts
// (Python's jsonschema FormatChecker with its optional checkers, pydantic's
// types, email-validator), written in one canonical spelling. Invariant: every
// string a format grammar matches is valid under that format; formats JSON
// Schema does not define (pydantic's "binary", "password", "path", ...) are
// annotations and constrain nothing.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "server/structured/json_schema_pattern.h"

namespace stet::server {

// The grammar for `format` (the content between a JSON string's quotes, as
// StringGrammar says); nullopt when the format is an annotation only.
std::optional<StringGrammar> FormatGbnf(const std::string& format);

// Every format FormatGbnf constrains, for docs and tests.
const char* const* ConstrainedFormats();

}  // namespace stet::server
