// GBNF grammars (llama.cpp's syntax) compiled to a byte-level form: every
// character class and literal becomes sequences of byte sets (UTF-8 encoded,
// so a matcher advances on bytes and only valid UTF-8 is accepted). Invariant:
// whatever text ParseGbnf is given, it returns a Grammar or an InvalidArgument
// naming the problem, within GrammarLimits — never a crash, hang or unbounded
// allocation; a compiled grammar has no left recursion (matching terminates).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace stet {

// Bounds on what an outsider's grammar may cost. Exceeding one is an
// InvalidArgument (the server's 400), found at parse time where it can be, or
// by the matcher (GrammarMatcher) while it runs.
struct GrammarLimits {
  size_t max_bytes = 256 * 1024;   // grammar text
  int max_rules = 16384;           // named and generated rules
  int max_elements = 1 << 20;      // compiled elements (a rule's alternatives laid out)
  int max_depth = 64;              // nesting of parentheses
  int max_repeat = 4096;           // m and n of x{m,n}
  int max_stacks = 1024;           // simultaneous parse stacks of a matcher
  int max_expand_steps = 1 << 16;  // work to reach the next bytes after one accepted byte
  // Stack advances one token mask may take (the trie walk): bounds what one
  // step of a constrained choice costs, whatever the grammar (JSON: ~10^6).
  int64_t max_mask_steps = int64_t{1} << 25;
};

// 256-bit set of bytes.
struct ByteSet {
  uint64_t w[4] = {0, 0, 0, 0};
  bool Has(uint8_t b) const { return (w[b >> 6] >> (b & 63)) & 1; }
  void Add(uint8_t b) { w[b >> 6] |= uint64_t{1} << (b & 63); }
  void AddRange(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) Add(static_cast<uint8_t>(b));
  }
  bool operator==(const ByteSet& o) const {
    return w[0] == o.w[0] && w[1] == o.w[1] && w[2] == o.w[2] && w[3] == o.w[3];
  }
};

// The verdict on a grammar's first token mask for one vocabulary (ProbeFirstMask,
// engine/grammar_matcher.h), kept with the grammar so every prompt and every
// validation of a request pays for it once.
struct GrammarProbe {
  std::mutex mu;
  const void* trie = nullptr;  // the vocabulary it was computed for; null: not yet
  Status status;
};

// The compiled grammar. Each alternative of each rule is a run of elements in
// `elems` ending with kEnd; an element >= 0 is an index into `sets` (one
// byte), kEnd ends the alternative, and a value <= kRefBase refers to rule
// (kRefBase - value).
struct Grammar {
  static constexpr int32_t kEnd = -1;
  static constexpr int32_t kRefBase = -2;
  static int32_t Ref(int rule) { return kRefBase - rule; }
  static bool IsRef(int32_t e) { return e <= kRefBase; }
  static int RuleOf(int32_t e) { return kRefBase - e; }

  std::vector<int32_t> elems;
  std::vector<std::vector<int32_t>> alts;  // rule -> start offsets of its alternatives
  std::vector<ByteSet> sets;
  std::vector<std::string> names;  // rule -> name (generated rules: "name~N")
  int root = 0;
  GrammarLimits limits;  // the limits it was parsed under (the matcher's too)
  std::shared_ptr<GrammarProbe> probe = std::make_shared<GrammarProbe>();
};

// Parses GBNF text: `name ::= alternatives` rules (names [A-Za-z0-9_-]+; a
// rule's body may span lines), `|`, sequences, `( ... )`, postfix `*` `+`
// `?` `{m}` `{m,}` `{m,n}`, "literals" and [classes] (`^` negation, ranges)
// with escapes \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH, `.` (any
// character) and `#` comments. The start rule is `root`. Refused: undefined
// or duplicate rules, left recursion (a rule reaching itself before any byte,
// which includes repeating something that can match nothing, as in ("a"?)*),
// and anything beyond `limits`.
Result<std::shared_ptr<const Grammar>> ParseGbnf(std::string_view text,
                                                 const GrammarLimits& limits = {});

}  // namespace stet
