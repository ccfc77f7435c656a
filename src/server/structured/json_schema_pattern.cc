// The pattern compiler: UTF-8 text -> code points -> a regex tree (parsing
// refuses what a grammar cannot express) -> anchors split off per top-level
// alternative, the unanchored ends trimmed (`x{2,}` before an unanchored end
// is `x{2}`: the any-character run absorbs the rest, which keeps the
// matcher's stacks few) -> GBNF text, each node emitted once (memoized) under
// a byte budget, and checked by ParseGbnf. A repetition of something that can
// match the empty string repeats its non-empty part instead (the grammar
// refuses ("a"?)*). Every step is linear in the pattern or bounded by a limit.
// PatternTarget::kRawText (a whole output as a regex, vLLM's structured
// outputs) emits raw characters instead of JSON-string encodings and anchors
// every alternative at both ends.
#include "server/structured/json_schema_pattern.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <tuple>

#include "engine/grammar.h"
#include "server/structured/json_string_chars.h"

namespace stet::server {
namespace {

using namespace chars;  // NOLINT: the code point helpers this file is built on

constexpr uint32_t kNone = 0xFFFFFFFF;
constexpr int64_t kLenCap = int64_t{1} << 40;

// ---- the regex tree ----

struct Expr {
  std::string text;
  bool atomic = true;  // a postfix operator may follow it directly
};

struct Node;
using NodeP = std::shared_ptr<const Node>;

struct Node {
  enum Kind { kNever, kEmpty, kChars, kSeq, kAlt, kRepeat, kStart, kEnd } kind = kEmpty;
  CodeRanges chars;                                 // kChars: non-empty
  std::vector<NodeP> kids;                          // kSeq, kAlt; kRepeat: one
  int64_t min = 0, max = 0;                         // kRepeat (max -1: unbounded)
  bool nullable = true;                             // matches the empty string
  bool anchors = false;                             // holds a kStart or kEnd
  mutable std::optional<Expr> full;                 // memoized Full()
  mutable std::optional<std::optional<Expr>> part;  // memoized NonEmpty()
};

NodeP Make(Node n) { return std::make_shared<const Node>(std::move(n)); }
Node Of(Node::Kind k) {
  Node n;
  n.kind = k;
  return n;
}
NodeP Never() { return Make(Of(Node::kNever)); }
NodeP Empty() { return Make(Of(Node::kEmpty)); }
NodeP Anchor(Node::Kind k) {
  Node n = Of(k);
  n.anchors = true;
  return Make(std::move(n));
}
NodeP Chars(const CodeRanges& r) {
  Node n = Of(Node::kChars);
  n.chars = NoSurrogates(r);
  if (n.chars.empty()) return Never();
  n.nullable = false;
  return Make(std::move(n));
}
NodeP AnyStar();

NodeP Seq(const std::vector<NodeP>& items) {
  Node n = Of(Node::kSeq);
  for (const NodeP& it : items) {
    if (it->kind == Node::kNever) return Never();
    if (it->kind == Node::kEmpty) continue;
    if (it->kind == Node::kSeq) {
      n.kids.insert(n.kids.end(), it->kids.begin(), it->kids.end());
    } else {
      n.kids.push_back(it);
    }
  }
  if (n.kids.empty()) return Empty();
  if (n.kids.size() == 1) return n.kids[0];
  for (const NodeP& k : n.kids) {
    n.nullable = n.nullable && k->nullable;
    n.anchors = n.anchors || k->anchors;
  }
  return Make(std::move(n));
}

// Alternatives flattened, at most one empty one, single characters merged into one class.
NodeP Alt(const std::vector<NodeP>& alts) {
  std::vector<NodeP> flat;
  for (const NodeP& a : alts) {
    if (a->kind == Node::kAlt) {
      flat.insert(flat.end(), a->kids.begin(), a->kids.end());
    } else {
      flat.push_back(a);
    }
  }
  Node n = Of(Node::kAlt);
  n.nullable = false;
  bool empty = false;
  size_t chars_at = flat.size();
  CodeRanges chars;
  for (const NodeP& a : flat) {
    if (a->kind == Node::kNever || (a->kind == Node::kEmpty && empty)) continue;
    empty = empty || a->kind == Node::kEmpty;
    if (a->kind == Node::kChars) {
      if (chars_at == flat.size()) chars_at = n.kids.size();
      chars.insert(chars.end(), a->chars.begin(), a->chars.end());
      if (chars_at != n.kids.size()) continue;
    }
    n.kids.push_back(a);
  }
  if (chars_at < n.kids.size()) n.kids[chars_at] = Chars(chars);
  if (n.kids.empty()) return Never();
  if (n.kids.size() == 1) return n.kids[0];
  for (const NodeP& k : n.kids) {
    n.nullable = n.nullable || k->nullable;
    n.anchors = n.anchors || k->anchors;
  }
  return Make(std::move(n));
}

NodeP Repeat(const NodeP& x, int64_t m, int64_t max) {
  if (x->kind == Node::kNever) return m == 0 ? Empty() : Never();
  if (x->kind == Node::kEmpty || max == 0) return Empty();
  if (m == 1 && max == 1) return x;
  Node n = Of(Node::kRepeat);
  n.kids = {x};
  n.min = m;
  n.max = max;
  n.nullable = m == 0 || x->nullable;
  n.anchors = x->anchors;
  return Make(std::move(n));
}

// A fresh node each time: nodes memoize their text, so none is shared between calls.
NodeP AnyStar() { return Repeat(Chars(kAll), 0, -1); }

// ---- parsing ----

Status Construct(const std::string& c, const std::string& what, size_t at) {
  return InvalidArgument("the pattern construct '" + c + "' (" + what +
                         ") cannot be expressed by a grammar, at character " + std::to_string(at));
}
Status Unsupported(const std::string& c, const std::string& what, size_t at) {
  return InvalidArgument("the pattern construct '" + c + "' (" + what +
                         ") is not supported, at character " + std::to_string(at));
}
Status Malformed(const std::string& what, size_t at) {
  return InvalidArgument("the pattern is malformed: " + what + ", at character " +
                         std::to_string(at));
}

Result<std::vector<uint32_t>> DecodeUtf8(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    const int len = c < 0x80    ? 1
                    : c >= 0xF8 ? 0
                    : c >= 0xF0 ? 4
                    : c >= 0xE0 ? 3
                    : c >= 0xC2 ? 2
                                : 0;
    if (len == 0 || i + len > s.size()) return InvalidArgument("the pattern is not valid UTF-8");
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (int k = 1; k < len; ++k) {
      const uint8_t b = static_cast<uint8_t>(s[i + k]);
      if ((b & 0xC0) != 0x80) return InvalidArgument("the pattern is not valid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[len] || cp > kMaxCp || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return InvalidArgument("the pattern is not valid UTF-8");
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

// One element of a class, or an escape: a code point, or a shorthand's set
// (`under`: what it surely matches in every engine; `over`: within ASCII,
// what it may match in some engine).
struct Item {
  bool is_set = false;
  uint32_t cp = 0;
  CodeRanges under, over;
};

Item Shorthand(uint32_t c) {
  Item it;
  it.is_set = true;
  const uint32_t lower = c | 0x20;
  const CodeRanges& narrow = lower == 'd' ? kDigit : lower == 'w' ? kWord : kSpaceNarrow;
  const CodeRanges& wide = lower == 'd' ? kDigit : lower == 'w' ? kWord : kSpaceWide;
  if (c == lower) {
    it.under = narrow;
    it.over = wide;
  } else {
    it.under = Within(0, 0x7F, wide);
    it.over = Within(0, 0x7F, narrow);
  }
  return it;
}

class PatternParser {
 public:
  explicit PatternParser(std::vector<uint32_t> s) : s_(std::move(s)) {}

  Result<NodeP> Run() {
    STET_ASSIGN_OR_RETURN(NodeP n, ParseAlternation(0));
    if (pos_ < s_.size()) return Malformed("unbalanced ')'", pos_ + 1);
    return n;
  }

 private:
  uint32_t Peek(size_t k = 0) const { return pos_ + k < s_.size() ? s_[pos_ + k] : kNone; }
  bool At(uint32_t c) const { return Peek() == c; }
  size_t Here() const { return pos_ + 1; }  // 1-based, for messages
  static bool IsDigit(uint32_t c) { return c >= '0' && c <= '9'; }
  static int HexValue(uint32_t c) {
    return IsDigit(c)                               ? c - '0'
           : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
                                                    : -1;
  }

  Result<NodeP> ParseAlternation(int depth) {
    std::vector<NodeP> alts;
    while (true) {
      STET_ASSIGN_OR_RETURN(NodeP seq, ParseSequence(depth));
      alts.push_back(seq);
      if (!At('|')) return Alt(alts);
      ++pos_;
    }
  }

  Result<NodeP> ParseSequence(int depth) {
    std::vector<NodeP> items;
    while (pos_ < s_.size() && !At('|') && !At(')')) {
      const bool anchor = At('^') || At('$');
      STET_ASSIGN_OR_RETURN(NodeP atom, ParseAtom(depth));
      STET_ASSIGN_OR_RETURN(NodeP term, ParseQuantifier(atom, !anchor));
      items.push_back(term);
    }
    return Seq(items);
  }

  // {m}, {m,} or {m,n} at pos_: false (pos_ unchanged) when the text is not one.
  Result<bool> ParseBraces(int64_t* m, int64_t* n) {
    const size_t start = pos_;
    auto number = [&](int64_t* v) {
      if (!IsDigit(Peek())) return false;
      for (*v = 0; IsDigit(Peek()); ++pos_)
        *v = std::min<int64_t>(*v * 10 + (Peek() - '0'), kLenCap);
      return true;
    };
    ++pos_;
    bool ok = number(m);
    *n = *m;
    if (ok && At(',')) {
      ++pos_;
      if (!number(n)) *n = -1;
    }
    if (!ok || !At('}')) {
      pos_ = start;
      return false;
    }
    ++pos_;
    if (*m > kMaxPatternRepeat || *n > kMaxPatternRepeat) {
      return Unsupported("{" + std::to_string(std::max(*m, *n)) + "}",
                         "a repetition count above " + std::to_string(kMaxPatternRepeat),
                         start + 1);
    }
    if (*n >= 0 && *n < *m)
      return Malformed("numbers out of order in a {m,n} quantifier", start + 1);
    return true;
  }

  Result<NodeP> ParseQuantifier(NodeP atom, bool quantifiable) {
    int64_t m = 0, n = -1;
    const uint32_t c = Peek();
    if (c == '*' || c == '+' || c == '?') {
      m = c == '+' ? 1 : 0;
      n = c == '?' ? 1 : -1;
      ++pos_;
    } else if (c == '{') {
      STET_ASSIGN_OR_RETURN(bool braces, ParseBraces(&m, &n));
      if (!braces) return Malformed("a literal '{' must be escaped as '\\{'", Here());
    } else {
      return atom;
    }
    if (!quantifiable) return Malformed("a quantifier follows an anchor", Here() - 1);
    if (At('?')) ++pos_;  // lazy: the same language
    if (At('*') || At('+') || At('?') || At('{')) {
      return Malformed("a quantifier follows a quantifier", Here());
    }
    return Repeat(atom, m, n);
  }

  Result<NodeP> ParseAtom(int depth) {
    const uint32_t c = s_[pos_];
    switch (c) {
      case '^':
      case '$':
        ++pos_;
        return Anchor(c == '^' ? Node::kStart : Node::kEnd);
      case '(':
        return ParseGroup(depth + 1);
      case '[':
        return ParseClass();
      case '.':
        ++pos_;
        return Chars(Subtract(kAll, {{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}}));
      case '\\': {
        STET_ASSIGN_OR_RETURN(Item it, ParseEscape(false));
        return Chars(it.is_set ? it.under : CodeRanges{{it.cp, it.cp}});
      }
      case '*':
      case '+':
      case '?':
        return Malformed(std::string("'") + static_cast<char>(c) + "' follows nothing to repeat",
                         Here());
      case '{': {
        int64_t m, n;
        STET_ASSIGN_OR_RETURN(bool braces, ParseBraces(&m, &n));
        return Malformed(braces ? "a quantifier follows nothing to repeat"
                                : "a literal '{' must be escaped as '\\{'",
                         Here());
      }
      default:
        ++pos_;
        return Chars({{c, c}});
    }
  }

  Result<NodeP> ParseGroup(int depth) {
    const size_t open = Here();
    if (depth > kMaxPatternDepth) {
      return InvalidArgument("the pattern nests groups deeper than " +
                             std::to_string(kMaxPatternDepth) + ", at character " +
                             std::to_string(open));
    }
    ++pos_;
    if (At('?')) STET_RETURN_IF_ERROR(ParseGroupKind(open));
    STET_ASSIGN_OR_RETURN(NodeP inner, ParseAlternation(depth));
    if (!At(')')) return Malformed("the '(' is never closed", open);
    ++pos_;
    return inner;
  }

  // After "(?": accepts ':' and '<name>', refuses the rest by name.
  Status ParseGroupKind(size_t open) {
    const uint32_t k = Peek(1), k2 = Peek(2);
    if (k == ':') {
      pos_ += 2;
      return Status::Ok();
    }
    if (k == '=') return Construct("(?=", "look-ahead", open);
    if (k == '!') return Construct("(?!", "negative look-ahead", open);
    if (k == '<' && k2 == '=') return Construct("(?<=", "look-behind", open);
    if (k == '<' && k2 == '!') return Construct("(?<!", "negative look-behind", open);
    if (k != '<') {
      std::string c = "(?";
      if (k != kNone) AppendUtf8(k, &c);
      return Unsupported(c, "inline flags or an unknown group kind", open);
    }
    pos_ += 2;
    const size_t name = pos_;
    auto ident = [](uint32_t c, bool first) {
      return c == '_' || c == '$' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c >= 0x80 ||
             (!first && IsDigit(c));
    };
    while (pos_ < s_.size() && ident(Peek(), pos_ == name)) ++pos_;
    if (pos_ == name || !At('>')) return Malformed("a group name must be an identifier", open);
    ++pos_;
    return Status::Ok();
  }

  Result<uint32_t> ParseHexDigits(int digits, const char* what) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int d = HexValue(Peek());
      if (d < 0)
        return Malformed(
            std::string("'") + what + "' needs " + std::to_string(digits) + " hex digits", Here());
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    return v;
  }

  Result<uint32_t> ParseUnicodeEscape(size_t at) {
    if (At('{')) return Unsupported("\\u{", "a code point escape; write \\uHHHH", at);
    STET_ASSIGN_OR_RETURN(uint32_t v, ParseHexDigits(4, "\\u"));
    if (v >= 0xD800 && v <= 0xDBFF && Peek() == '\\' && Peek(1) == 'u') {
      const size_t save = pos_;
      pos_ += 2;
      auto low = ParseHexDigits(4, "\\u");
      if (low.ok() && *low >= 0xDC00 && *low <= 0xDFFF) {
        return 0x10000 + ((v - 0xD800) << 10) + (*low - 0xDC00);
      }
      pos_ = save;
    }
    if (v >= 0xD800 && v <= 0xDFFF) return Unsupported("\\u" + Hex(v, 4), "a lone surrogate", at);
    return v;
  }

  // After a backslash (at pos_): one code point or a shorthand's set.
  Result<Item> ParseEscape(bool in_class) {
    const size_t at = Here();
    ++pos_;
    if (pos_ >= s_.size()) return Malformed("the pattern ends in a lone '\\'", at);
    const uint32_t c = s_[pos_++];
    Item it;
    std::string name = "\\";
    AppendUtf8(c, &name);
    switch (c) {
      case 'd':
      case 'D':
      case 'w':
      case 'W':
      case 's':
      case 'S':
        return Shorthand(c);
      case 't':
      case 'n':
      case 'v':
      case 'f':
      case 'r':
        it.cp = c == 't' ? 0x09 : c == 'n' ? 0x0A : c == 'v' ? 0x0B : c == 'f' ? 0x0C : 0x0D;
        return it;
      case 'b':
        if (in_class) {
          it.cp = 0x08;
          return it;
        }
        return Construct("\\b", "word boundary", at);
      case 'B':
        return Construct("\\B", "word boundary", at);
      case 'k':
        return Construct("\\k", "named back-reference", at);
      case 'p':
      case 'P':
        return Unsupported(name + "{", "Unicode property escape", at);
      case 'x': {
        STET_ASSIGN_OR_RETURN(it.cp, ParseHexDigits(2, "\\x"));
        return it;
      }
      case 'u': {
        STET_ASSIGN_OR_RETURN(it.cp, ParseUnicodeEscape(at));
        return it;
      }
      case 'c': {
        const uint32_t l = Peek() | 0x20;
        if (l < 'a' || l > 'z') return Malformed("'\\c' needs a letter", at);
        it.cp = Peek() & 0x1F;
        ++pos_;
        return it;
      }
      default:
        break;
    }
    if (c == '0' && !IsDigit(Peek())) return it;  // NUL
    if (IsDigit(c)) {
      return in_class || c == '0' ? Unsupported(name, "octal escape", at)
                                  : Construct(name, "back-reference", at);
    }
    const bool letter = (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    if (c < 0x20 || c >= 0x7F || letter) return Unsupported(name, "unknown escape", at);
    it.cp = c;  // escaped punctuation
    return it;
  }

  Result<Item> ParseClassAtom() {
    if (At('\\')) return ParseEscape(true);
    Item it;
    it.cp = s_[pos_++];
    return it;
  }

  Result<NodeP> ParseClass() {
    const size_t open = Here();
    ++pos_;
    const bool negated = At('^');
    if (negated) ++pos_;
    CodeRanges under, over;
    bool shorthand = false;
    while (!At(']')) {
      if (pos_ >= s_.size()) return Malformed("the '[' is never closed", open);
      STET_ASSIGN_OR_RETURN(Item lo, ParseClassAtom());
      Item hi = lo;
      if (At('-') && Peek(1) != ']' && Peek(1) != kNone) {
        ++pos_;
        STET_ASSIGN_OR_RETURN(hi, ParseClassAtom());
        if (lo.is_set || hi.is_set) {
          return Unsupported("-", "a class range bounded by a shorthand escape", Here() - 1);
        }
        if (hi.cp < lo.cp) return Malformed("a class range out of order", Here() - 1);
      }
      shorthand = shorthand || lo.is_set;
      if (lo.is_set) {
        under.insert(under.end(), lo.under.begin(), lo.under.end());
        over.insert(over.end(), lo.over.begin(), lo.over.end());
      } else {
        under.emplace_back(lo.cp, hi.cp);
        over.emplace_back(lo.cp, hi.cp);
      }
    }
    ++pos_;
    if (!negated) return Chars(Normalize(under));
    return Chars(shorthand ? Within(0, 0x7F, over) : Subtract(kAll, Normalize(under)));
  }

  std::vector<uint32_t> s_;
  size_t pos_ = 0;
};

// ---- anchors and unanchored ends ----

// at_end: L(Trim(x) any*) == L(x any*); else L(any* Trim(x)) == L(any* x).
// Nullable when that is every string.
NodeP Trim(const NodeP& x, bool at_end) {
  switch (x->kind) {
    case Node::kRepeat: {  // x{m,n} any* == x{m-1} Trim(x) any*
      if (x->nullable) return Empty();
      const NodeP rest = Repeat(x->kids[0], x->min - 1, x->min - 1);
      const NodeP edge = Trim(x->kids[0], at_end);
      return at_end ? Seq({rest, edge}) : Seq({edge, rest});
    }
    case Node::kAlt: {
      std::vector<NodeP> alts;
      for (const NodeP& k : x->kids) {
        alts.push_back(Trim(k, at_end));
        if (alts.back()->nullable) return Empty();
      }
      return Alt(alts);
    }
    case Node::kSeq: {
      std::vector<NodeP> items = x->kids;
      if (!at_end) std::reverse(items.begin(), items.end());
      while (!items.empty()) {
        NodeP t = Trim(items.back(), at_end);
        if (!t->nullable) {
          items.back() = t;
          break;
        }
        items.pop_back();
      }
      if (!at_end) std::reverse(items.begin(), items.end());
      return Seq(items);
    }
    default:
      return x;
  }
}

bool HasKind(const Node& n, Node::Kind k) {
  if (n.kind == k) return true;
  for (const NodeP& c : n.kids) {
    if (c->anchors && HasKind(*c, k)) return true;
  }
  return false;
}

// The search language: each top-level alternative's anchors split off, its
// unanchored ends given any-character runs; alternatives anchored alike share them.
Result<NodeP> Assemble(const NodeP& root, bool full_match) {
  std::vector<NodeP> alts = root->kind == Node::kAlt ? root->kids : std::vector<NodeP>{root};
  std::vector<NodeP> middles[2][2];
  for (const NodeP& a : alts) {
    std::vector<NodeP> items = a->kind == Node::kSeq ? a->kids : std::vector<NodeP>{a};
    size_t b = 0, e = items.size();
    bool start = false, end = false;
    for (; b < e && items[b]->kind == Node::kStart; ++b) start = true;
    for (; e > b && items[e - 1]->kind == Node::kEnd; --e) end = true;
    start = start || full_match;
    end = end || full_match;
    NodeP mid = Seq(std::vector<NodeP>(items.begin() + static_cast<ptrdiff_t>(b),
                                       items.begin() + static_cast<ptrdiff_t>(e)));
    if (mid->anchors) {
      const bool caret = HasKind(*mid, Node::kStart);
      return InvalidArgument(std::string("the pattern construct '") + (caret ? "^" : "$") +
                             "' (an anchor " + (caret ? "not at the start" : "not at the end") +
                             " of a top-level alternative) is not supported");
    }
    if (!end) mid = Trim(mid, true);
    if (!start) mid = Trim(mid, false);
    middles[start][end].push_back(mid);
  }
  std::vector<NodeP> top;
  for (int s = 0; s < 2; ++s) {
    for (int e = 0; e < 2; ++e) {
      if (middles[s][e].empty()) continue;
      NodeP mid = Alt(middles[s][e]);
      if ((!s || !e) && mid->nullable) return AnyStar();  // every string
      top.push_back(Seq({s ? Empty() : AnyStar(), mid, e ? Empty() : AnyStar()}));
    }
  }
  return Alt(top);
}

// ---- lengths ----

int64_t SatAdd(int64_t a, int64_t b) { return std::min(a + b, kLenCap); }  // both <= kLenCap
int64_t SatMul(int64_t a, int64_t b) { return b != 0 && a > kLenCap / b ? kLenCap : a * b; }

// max -1: unbounded (also when it passes kLenCap).
std::pair<int64_t, int64_t> Lengths(const Node& n) {
  switch (n.kind) {
    case Node::kChars:
      return {1, 1};
    case Node::kSeq: {
      int64_t lo = 0, hi = 0;
      for (const NodeP& k : n.kids) {
        auto [a, b] = Lengths(*k);
        lo = SatAdd(lo, a);
        hi = hi < 0 || b < 0 || SatAdd(hi, b) >= kLenCap ? -1 : hi + b;
      }
      return {lo, hi};
    }
    case Node::kAlt: {
      int64_t lo = kLenCap, hi = 0;
      for (const NodeP& k : n.kids) {
        auto [a, b] = Lengths(*k);
        lo = std::min(lo, a);
        hi = hi < 0 || b < 0 ? -1 : std::max(hi, b);
      }
      return {lo, hi};
    }
    case Node::kRepeat: {
      auto [a, b] = Lengths(*n.kids[0]);
      const int64_t hi = b == 0 ? 0 : (b < 0 || n.max < 0) ? -1 : SatMul(b, n.max);
      return {SatMul(a, n.min), hi >= kLenCap ? -1 : hi};
    }
    default:
      return {0, 0};
  }
}

// ---- GBNF emission ----

class Emitter {
 public:
  explicit Emitter(bool raw) : raw_(raw) {}

  Result<Expr> Full(const Node& n) {
    if (!n.full) {
      STET_ASSIGN_OR_RETURN(Expr e, Compute(n));
      STET_RETURN_IF_ERROR(Check(e));
      n.full = std::move(e);
    }
    return *n.full;
  }

  // L(n) minus the empty string, for a nullable n; nullopt when that is nothing.
  Result<std::optional<Expr>> NonEmpty(const Node& n) {
    if (!n.nullable) {
      STET_ASSIGN_OR_RETURN(Expr e, Full(n));
      return std::optional<Expr>(std::move(e));
    }
    if (!n.part) {
      STET_ASSIGN_OR_RETURN(std::optional<Expr> e, ComputeNonEmpty(n));
      if (e) STET_RETURN_IF_ERROR(Check(*e));
      n.part = std::move(e);
    }
    return *n.part;
  }

 private:
  static size_t Size(size_t n) { return n; }
  static Status Check(const Expr& e) { return Check(e.text.size()); }
  static Status Check(size_t size) {
    if (size <= kMaxPatternGbnfBytes) return Status::Ok();
    return InvalidArgument("the pattern's grammar would be larger than " +
                           std::to_string(kMaxPatternGbnfBytes) + " bytes");
  }
  static std::string Wrap(const Expr& e) { return e.atomic ? e.text : "( " + e.text + " )"; }
  std::string Lit(const std::string& text) const { return raw_ ? RawLiteral(text) : Literal(text); }
  std::string CharSet(const CodeRanges& r) const {
    return raw_ ? ClassText(NoSurrogates(r)) : JsonCharSetGbnf(r);
  }
  static bool SingleChar(const Node& n) {
    return n.kind == Node::kChars && n.chars.size() == 1 && n.chars[0].first == n.chars[0].second;
  }
  static Expr Choice(const std::vector<Expr>& parts) {
    if (parts.size() == 1) return parts[0];
    std::string out = "(";
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : " ") + parts[i].text;
    return {out + " )", true};
  }
  static std::string Suffix(int64_t m, int64_t n) {
    if (n < 0) return m == 0 ? "*" : m == 1 ? "+" : "{" + std::to_string(m) + ",}";
    if (m == 0 && n == 1) return "?";
    if (m == n) return "{" + std::to_string(m) + "}";
    return "{" + std::to_string(m) + "," + std::to_string(n) + "}";
  }

  // Items in order, runs of single characters merged into one literal.
  Result<Expr> Sequence(const std::vector<NodeP>& items, size_t from) {
    Expr out{"", true};
    int pieces = 0;
    std::string run;
    auto add = [&](const Expr& e) {
      if (e.text.empty()) return;
      out.text += (out.text.empty() ? "" : " ") + e.text;
      out.atomic = ++pieces == 1 && e.atomic;
    };
    for (size_t i = from; i < items.size(); ++i) {
      if (SingleChar(*items[i])) {
        if (raw_) {
          AppendUtf8(items[i]->chars[0].first, &run);
        } else {
          run += JsonEncode(items[i]->chars[0].first);
        }
        continue;
      }
      if (!run.empty()) add({Lit(run), true});
      run.clear();
      STET_ASSIGN_OR_RETURN(Expr e, Full(*items[i]));
      add(e);
      STET_RETURN_IF_ERROR(Check(out));
    }
    if (!run.empty()) add({Lit(run), true});
    return out;
  }

  // Non-empty pieces whose repetition is n's: (A B)* == (A|B)* when A and B
  // can be empty, and (A*)* == A*; so nested stars stay unambiguous.
  static void StarPieces(const Node& n, std::vector<const Node*>* out, CodeRanges* chars) {
    if (n.kind == Node::kChars) {
      chars->insert(chars->end(), n.chars.begin(), n.chars.end());
    } else if (!n.nullable) {
      out->push_back(&n);
    } else {
      for (const NodeP& k : n.kids) StarPieces(*k, out, chars);
    }
  }
  // x* (suffix "*") or its non-empty part (suffix "+"); empty text when x
  // matches only the empty string.
  Result<Expr> Star(const Node& x, const char* suffix) {
    std::vector<const Node*> pieces;
    CodeRanges chars;
    StarPieces(x, &pieces, &chars);
    std::vector<Expr> parts;
    size_t total = 0;
    if (!chars.empty()) parts.push_back({CharSet(Normalize(chars)), true});
    for (const Node* p : pieces) {
      STET_ASSIGN_OR_RETURN(Expr e, Full(*p));
      bool seen = false;
      for (const Expr& q : parts) seen = seen || q.text == e.text;
      if (seen) continue;
      total += e.text.size();
      STET_RETURN_IF_ERROR(Check(total));
      parts.push_back(std::move(e));
    }
    if (parts.empty()) return Expr{"", true};
    return Expr{Wrap(Choice(parts)) + suffix, false};
  }

  Result<Expr> Compute(const Node& n) {
    switch (n.kind) {
      case Node::kEmpty:
        return Expr{"", true};
      case Node::kChars:
        return Expr{CharSet(n.chars), true};
      case Node::kSeq:
        return Sequence(n.kids, 0);
      case Node::kAlt: {
        std::vector<Expr> parts;
        bool optional = false;
        size_t total = 0;
        for (const NodeP& k : n.kids) {
          if (k->kind == Node::kEmpty) {
            optional = true;
            continue;
          }
          STET_ASSIGN_OR_RETURN(Expr e, Full(*k));
          total += e.text.size();
          STET_RETURN_IF_ERROR(Check(Size(total)));
          parts.push_back(std::move(e));
        }
        const Expr c = Choice(parts);
        return optional ? Expr{Wrap(c) + "?", false} : c;
      }
      case Node::kRepeat: {
        const Node& x = *n.kids[0];
        if (n.max < 0 && x.nullable) return Star(x, "*");
        STET_ASSIGN_OR_RETURN(std::optional<Expr> base, NonEmpty(x));
        if (!base) return Expr{"", true};
        return Expr{Wrap(*base) + Suffix(x.nullable ? 0 : n.min, n.max), false};
      }
      default:
        return Internal("pattern: an unexpected node in the tree");
    }
  }

  Result<std::optional<Expr>> ComputeNonEmpty(const Node& n) {
    std::vector<Expr> parts;
    size_t total = 0;
    if (n.kind == Node::kAlt) {
      for (const NodeP& k : n.kids) {
        STET_ASSIGN_OR_RETURN(std::optional<Expr> e, NonEmpty(*k));
        if (!e) continue;
        total += e->text.size();
        STET_RETURN_IF_ERROR(Check(Size(total)));
        parts.push_back(std::move(*e));
      }
    } else if (n.kind == Node::kSeq) {  // every item nullable: the first non-empty one is i
      for (size_t i = 0; i < n.kids.size(); ++i) {
        STET_ASSIGN_OR_RETURN(std::optional<Expr> head, NonEmpty(*n.kids[i]));
        if (!head) continue;
        STET_ASSIGN_OR_RETURN(Expr rest, Sequence(n.kids, i + 1));
        if (rest.text.empty()) {
          parts.push_back(std::move(*head));
        } else {
          parts.push_back({head->text + " " + rest.text, false});
        }
        total += parts.back().text.size();
        STET_RETURN_IF_ERROR(Check(Size(total)));
      }
    } else if (n.kind == Node::kRepeat) {
      if (n.max < 0) {
        STET_ASSIGN_OR_RETURN(Expr e, Star(*n.kids[0], "+"));
        return e.text.empty() ? std::optional<Expr>() : std::optional<Expr>(std::move(e));
      }
      STET_ASSIGN_OR_RETURN(std::optional<Expr> base, NonEmpty(*n.kids[0]));
      if (!base) return std::optional<Expr>();
      if (n.max == 1) return base;
      return std::optional<Expr>(Expr{Wrap(*base) + Suffix(1, n.max), false});
    }
    if (parts.empty()) return std::optional<Expr>();
    return std::optional<Expr>(Choice(parts));
  }

  bool raw_;  // PatternTarget::kRawText
};

}  // namespace

Result<StringGrammar> PatternToGbnf(const std::string& pattern, PatternTarget target) {
  const bool raw = target == PatternTarget::kRawText;
  if (pattern.size() > kMaxPatternBytes) {
    return InvalidArgument("the pattern is " + std::to_string(pattern.size()) +
                           " bytes, more than the " + std::to_string(kMaxPatternBytes) +
                           " stet accepts");
  }
  STET_ASSIGN_OR_RETURN(std::vector<uint32_t> cps, DecodeUtf8(pattern));
  STET_ASSIGN_OR_RETURN(NodeP tree, PatternParser(std::move(cps)).Run());
  if (tree->kind == Node::kNever) return InvalidArgument("the pattern matches no string");
  STET_ASSIGN_OR_RETURN(NodeP search, Assemble(tree, raw));
  Emitter emitter(raw);
  STET_ASSIGN_OR_RETURN(Expr body, emitter.Full(*search));
  StringGrammar out;
  out.body = std::move(body.text);
  if (raw && out.body.empty()) return InvalidArgument("the pattern matches only the empty text");
  std::tie(out.min_len, out.max_len) = Lengths(*search);
  GrammarLimits limits;
  limits.max_depth = kMaxPatternGbnfDepth;
  limits.max_rules = limits.max_rules / 2;
  limits.max_elements = limits.max_elements / 2;
  auto check = ParseGbnf(
      raw ? "root ::= " + out.body : "root ::= \"\\\"\" " + out.body + " \"\\\"\"", limits);
  if (!check.ok()) {
    return InvalidArgument("the pattern's grammar is too large or deep (" +
                           check.status().message() + ")");
  }
  return out;
}

}  // namespace stet::server
