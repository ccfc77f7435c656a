// Parser: tokens -> statement list, following jinja2/parser.py's grammar and
// operator precedence (or < and < not < compare < +,- < ~ < *,/,//,% < ** <
// unary, with filters and tests binding tighter than any binary operator).
// Invariant: nesting depth is capped (kMaxParseDepth), so hostile input
// cannot exhaust the stack here or in the interpreter that walks the tree.
#pragma once

#include <string_view>
#include <vector>

#include "template/ast.h"
#include "template/lexer.h"

namespace stet::tmpl {

inline constexpr int kMaxParseDepth = 200;

// Throws TemplateError(kSyntax). Unknown filters and tests are a syntax error
// unless they sit inside an `if` or a conditional expression (Jinja then
// defers the error to the moment they run).
std::vector<NodePtr> Parse(std::string_view source, const LexerOptions& options);

// Registries shared by the parser (name checks) and the interpreter.
bool IsKnownFilter(std::string_view name);
bool IsKnownTest(std::string_view name);

}  // namespace stet::tmpl
