// JSON Schema `pattern` -> GBNF: an ECMA-262 regular expression becomes a
// grammar expression for the JSON-encoded content of a string (the bytes
// between its quotes). Invariant: every content the expression matches decodes
// to a string the pattern matches under JSON Schema's unanchored-search
// semantics — in ECMA-262 and, for the shorthand escapes, also in Python's re
// and Rust's regex (stet takes the meaning all three share) — and every string
// the pattern matches within that shared meaning is matched, in its one
// canonical encoding. A pattern stet cannot express is refused with an
// InvalidArgument naming the construct; whatever the text, the conversion
// stays within the limits below (no crash, no exponential time or output).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "server/structured/json_string_chars.h"

namespace stet::server {

constexpr size_t kMaxPatternBytes = 4096;           // pattern text
constexpr int kMaxPatternDepth = 32;                // nesting of groups
constexpr int kMaxPatternRepeat = 4096;             // m and n of {m,n}
constexpr size_t kMaxPatternGbnfBytes = 64 * 1024;  // the expression produced
constexpr int kMaxPatternGbnfDepth = 48;            // its parentheses (GBNF allows 64)

// A string grammar and the lengths (in code points) of the strings it matches.
struct StringGrammar {
  // A GBNF expression without rule names (nested parentheses only), safe as
  // one item of a sequence: `"\"" body "\""` is a JSON string. Wrap it in
  // parentheses before applying a postfix operator.
  std::string body;
  int64_t min_len = 0;   // saturated at 2^40
  int64_t max_len = -1;  // -1: unbounded (always so for an unanchored pattern)
};

// Converts `pattern` (UTF-8 text). Matching is by code point (as with the u
// flag). Supported: literals; escapes \t \n \r \v \f \0 \xHH \uHHHH (a
// surrogate pair combines) \cX and escaped ASCII punctuation; `.` (any code
// point but \n \r U+2028 U+2029); \d = [0-9], \w = [A-Za-z0-9_], \s =
// [ \t\n\v\f\r] and their complements \D \W \S taken within ASCII (\S also
// leaves out 0x1C-0x1F, which Python counts as space); classes with ranges,
// escapes and negation (within ASCII only when the class holds a shorthand
// escape, else over all code points); `[]` (nothing) and `[^]` (anything);
// groups ( ), (?: ), (?<name> ); alternation; * + ? {m} {m,} {m,n} and their
// lazy forms (the same language); `^` at the start and `$` at the end of a
// top-level alternative (also through top-level groups, as in `(^a$)`).
// Refused by name: look-ahead and look-behind, back-references (\1, \k<..>),
// word boundaries \b \B, Unicode property escapes \p \P, \u{..}, octal
// escapes, inline flags and other (? forms, anchors anywhere else, an
// unescaped '{' that is not a quantifier (ECMA and Python read `x{,3}`
// differently), unknown letter escapes, a quantifier after a quantifier
// (Python's possessive `a*+`), counts above kMaxPatternRepeat, a pattern
// matching no string (ECMA's `[]`), malformed patterns, and anything beyond
// the limits above — the produced grammar is also checked with ParseGbnf
// under half of GrammarLimits' rules and elements and kMaxPatternGbnfDepth,
// leaving room for the rest of a schema's grammar.
//
// PatternTarget::kRawText: the expression matches the raw UTF-8 text itself
// (no JSON escaping) and the whole text must match the pattern (every
// alternative anchored at both ends): a regular expression as a whole
// output, as vLLM's structured outputs take it. An empty match is allowed
// only where the pattern allows it.
enum class PatternTarget { kJsonString, kRawText };
Result<StringGrammar> PatternToGbnf(const std::string& pattern,
                                    PatternTarget target = PatternTarget::kJsonString);

}  // namespace stet::server
