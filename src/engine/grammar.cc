// The GBNF parser and compiler: text -> rules of byte-set sequences. Every
// loop is bounded by the input's length or a GrammarLimits field, and the
// nullable / left-recursion analysis is linear in the compiled size, so a
// hostile grammar costs at most its limits.
#include "engine/grammar.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

namespace stet {
namespace {

using Seq = std::vector<int32_t>;
using Alts = std::vector<Seq>;
using Range = std::pair<uint32_t, uint32_t>;  // code points, inclusive

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

int Utf8Encode(uint32_t cp, uint8_t* out) {
  if (cp < 0x80) {
    out[0] = static_cast<uint8_t>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
  out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  return 4;
}

int Utf8Len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// Splits [lo, hi] (same encoded length) into ranges whose UTF-8 encodings are
// products of per-byte ranges: each result is a sequence of (lo byte, hi byte).
void Utf8Split(uint32_t lo, uint32_t hi, std::vector<std::vector<Range>>* out) {
  const int len = Utf8Len(lo);
  for (int i = 1; i < len; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        Utf8Split(lo, lo | m, out);
        Utf8Split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        Utf8Split(lo, (hi & ~m) - 1, out);
        Utf8Split(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  Utf8Encode(lo, a);
  Utf8Encode(hi, b);
  std::vector<Range> seq;
  for (int i = 0; i < len; ++i) seq.emplace_back(a[i], b[i]);
  out->push_back(std::move(seq));
}

class Parser {
 public:
  Parser(std::string_view text, const GrammarLimits& limits) : s_(text), lim_(limits) {}

  Result<std::shared_ptr<const Grammar>> Run() {
    if (s_.size() > lim_.max_bytes) {
      return InvalidArgument("grammar: " + std::to_string(s_.size()) + " bytes, more than the " +
                             std::to_string(lim_.max_bytes) + " allowed");
    }
    SkipSpace();
    if (pos_ >= s_.size()) return InvalidArgument("grammar: empty (it needs a 'root' rule)");
    while (pos_ < s_.size()) {
      STET_RETURN_IF_ERROR(ParseRule());
      SkipSpace();
    }
    for (size_t r = 0; r < rules_.size(); ++r) {
      if (!defined_[r]) return InvalidArgument("grammar: rule '" + names_[r] + "' is not defined");
    }
    auto root = ids_.find("root");
    if (root == ids_.end()) return InvalidArgument("grammar: no 'root' rule");
    return Compile(root->second);
  }

 private:
  Status Error(const std::string& what) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return InvalidArgument("grammar: line " + std::to_string(line) + " column " +
                           std::to_string(col) + ": " + what);
  }
  bool At(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  static bool NameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  }
  void SkipSpace() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  std::string_view ParseName() {
    const size_t start = pos_;
    while (pos_ < s_.size() && NameChar(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  // A name followed by "::=": the next rule starts here (bodies may span lines).
  bool AtRuleStart() const {
    size_t p = pos_;
    while (p < s_.size() && NameChar(s_[p])) ++p;
    if (p == pos_) return false;
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t')) ++p;
    return s_.compare(p, 3, "::=") == 0;
  }

  Result<int> RuleId(std::string_view name) {
    auto it = ids_.find(std::string(name));
    if (it != ids_.end()) return it->second;
    return NewRule(std::string(name));
  }
  Result<int> NewRule(std::string name, bool named = true) {
    if (static_cast<int>(rules_.size()) >= lim_.max_rules) {
      return Error("more than " + std::to_string(lim_.max_rules) + " rules");
    }
    const int id = static_cast<int>(rules_.size());
    rules_.emplace_back();
    defined_.push_back(false);
    if (named) ids_.emplace(name, id);
    names_.push_back(std::move(name));
    return id;
  }
  Result<int> Generated(const std::string& base, Alts alts) {
    STET_ASSIGN_OR_RETURN(int id, NewRule(base + "~" + std::to_string(rules_.size()), false));
    STET_RETURN_IF_ERROR(Count(alts));
    rules_[id] = std::move(alts);
    defined_[id] = true;
    return id;
  }
  Status Count(const Alts& alts) {
    for (const Seq& a : alts) elements_ += static_cast<int64_t>(a.size()) + 1;
    if (elements_ > lim_.max_elements) {
      return Error("more than " + std::to_string(lim_.max_elements) + " compiled elements");
    }
    return Status::Ok();
  }

  Status ParseRule() {
    std::string_view name = ParseName();
    if (name.empty()) return Error("expected a rule name");
    while (At(' ') || At('\t')) ++pos_;
    if (s_.compare(pos_, 3, "::=") != 0)
      return Error("expected '::=' after '" + std::string(name) + "'");
    pos_ += 3;
    STET_ASSIGN_OR_RETURN(int id, RuleId(name));
    if (defined_[id]) return Error("rule '" + std::string(name) + "' is defined twice");
    defined_[id] = true;  // before the body: a self-reference is not "undefined"
    rule_name_ = std::string(name);
    Alts alts;
    STET_RETURN_IF_ERROR(ParseAlternates(0, &alts));
    STET_RETURN_IF_ERROR(Count(alts));
    rules_[id] = std::move(alts);
    return Status::Ok();
  }

  Status ParseAlternates(int depth, Alts* out) {
    if (depth > lim_.max_depth) {
      return Error("groups nested deeper than " + std::to_string(lim_.max_depth));
    }
    while (true) {
      Seq seq;
      STET_RETURN_IF_ERROR(ParseSequence(depth, &seq));
      out->push_back(std::move(seq));
      SkipSpace();
      if (!At('|')) return Status::Ok();
      ++pos_;
    }
  }

  Status ParseSequence(int depth, Seq* out) {
    while (true) {
      SkipSpace();
      if (pos_ >= s_.size() || At('|') || At(')') || AtRuleStart()) return Status::Ok();
      Seq unit;
      STET_RETURN_IF_ERROR(ParseItem(depth, &unit));
      while (pos_ < s_.size()) {  // postfix operators apply to the item just read
        const char c = s_[pos_];
        if (c != '*' && c != '+' && c != '?' && c != '{') break;
        STET_RETURN_IF_ERROR(ApplyPostfix(&unit));
      }
      out->insert(out->end(), unit.begin(), unit.end());
    }
  }

  Status ParseItem(int depth, Seq* unit) {
    const char c = s_[pos_];
    if (c == '"') {
      ++pos_;
      while (!At('"')) {
        if (pos_ >= s_.size()) return Error("unterminated string literal");
        STET_ASSIGN_OR_RETURN(uint32_t cp, ParseChar());
        uint8_t b[4];
        const int n = Utf8Encode(cp, b);
        for (int i = 0; i < n; ++i) unit->push_back(SetOf(b[i], b[i]));
      }
      ++pos_;
      return Status::Ok();
    }
    if (c == '[') return ParseClass(unit);
    if (c == '.') {
      ++pos_;
      return AddClass({{0, kMaxCodepoint}}, unit);
    }
    if (c == '(') {
      ++pos_;
      Alts alts;
      STET_RETURN_IF_ERROR(ParseAlternates(depth + 1, &alts));
      SkipSpace();
      if (!At(')')) return Error("expected ')'");
      ++pos_;
      STET_ASSIGN_OR_RETURN(int id, Generated(rule_name_, std::move(alts)));
      unit->push_back(Grammar::Ref(id));
      return Status::Ok();
    }
    if (NameChar(c)) {
      STET_ASSIGN_OR_RETURN(int id, RuleId(ParseName()));
      unit->push_back(Grammar::Ref(id));
      return Status::Ok();
    }
    return Error(std::string("unexpected character '") + c + "'");
  }

  // One character of a literal or class: an escape or one UTF-8 code point.
  Result<uint32_t> ParseChar() {
    const uint8_t c = static_cast<uint8_t>(s_[pos_]);
    if (c == '\\') {
      if (pos_ + 1 >= s_.size()) return Error("unterminated escape");
      const char e = s_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case 'n':
          return uint32_t{'\n'};
        case 'r':
          return uint32_t{'\r'};
        case 't':
          return uint32_t{'\t'};
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '/':
        case '\'':
          return static_cast<uint32_t>(e);
        case 'x':
          return ParseHex(2);
        case 'u':
          return ParseHex(4);
        case 'U':
          return ParseHex(8);
        default:
          pos_ -= 2;
          return Error(std::string("unknown escape '\\") + e + "'");
      }
    }
    if (c < 0x80) {
      ++pos_;
      return uint32_t{c};
    }
    const int len = c >= 0xF8 ? 0 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (len == 0 || pos_ + len > s_.size()) {
      return Error("invalid UTF-8");
    }
    uint32_t cp = c & (0x7F >> len);
    for (int i = 1; i < len; ++i) {
      const uint8_t b = static_cast<uint8_t>(s_[pos_ + i]);
      if ((b & 0xC0) != 0x80) return Error("invalid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    if (Utf8Len(cp) != len || cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return Error("invalid UTF-8");
    }
    pos_ += len;
    return cp;
  }
  Result<uint32_t> ParseHex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= s_.size()) return Error("expected hex digits");
      const char h = s_[pos_];
      int d = h >= '0' && h <= '9'   ? h - '0'
              : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                     : -1;
      if (d < 0) return Error("expected hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > kMaxCodepoint || (v >= 0xD800 && v <= 0xDFFF)) {
      return Error("escape is not a Unicode scalar value");
    }
    return v;
  }

  Status ParseClass(Seq* unit) {
    ++pos_;  // '['
    bool negated = false;
    if (At('^')) {
      negated = true;
      ++pos_;
    }
    std::vector<Range> ranges;
    while (!At(']')) {
      if (pos_ >= s_.size()) return Error("unterminated character class");
      STET_ASSIGN_OR_RETURN(uint32_t lo, ParseChar());
      uint32_t hi = lo;
      if (At('-') && pos_ + 1 < s_.size() && s_[pos_ + 1] != ']') {
        ++pos_;
        STET_ASSIGN_OR_RETURN(hi, ParseChar());
        if (hi < lo) return Error("character range out of order");
      }
      ranges.emplace_back(lo, hi);
    }
    ++pos_;
    std::sort(ranges.begin(), ranges.end());
    std::vector<Range> merged;
    for (const Range& r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    if (negated) {
      std::vector<Range> comp;
      uint32_t next = 0;
      for (const Range& r : merged) {
        if (r.first > next) comp.emplace_back(next, r.first - 1);
        next = r.second + 1;
      }
      if (next <= kMaxCodepoint) comp.emplace_back(next, kMaxCodepoint);
      merged.swap(comp);
    }
    if (merged.empty()) return Error("character class matches nothing");
    return AddClass(merged, unit);
  }

  // A class of sorted, disjoint code point ranges: its ASCII part as one byte
  // set, each multi-byte part as byte-set sequences; alternatives of a
  // generated rule when there is more than one sequence.
  Status AddClass(const std::vector<Range>& ranges, Seq* unit) {
    std::vector<std::vector<Range>> seqs;
    ByteSet ascii;
    bool has_ascii = false;
    const uint32_t bounds[4][2] = {{0, 0x7F}, {0x80, 0x7FF}, {0x800, 0xFFFF}, {0x10000, 0x10FFFF}};
    for (Range r : ranges) {
      for (const auto& bd : bounds) {
        uint32_t lo = std::max(r.first, bd[0]), hi = std::min(r.second, bd[1]);
        if (lo > hi) continue;
        if (bd[0] == 0) {
          ascii.AddRange(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
          has_ascii = true;
          continue;
        }
        // Surrogates are not characters: [lo, hi] minus D800..DFFF.
        if (lo <= 0xDFFF && hi >= 0xD800) {
          if (lo < 0xD800) Utf8Split(lo, 0xD7FF, &seqs);
          if (hi > 0xDFFF) Utf8Split(0xE000, hi, &seqs);
        } else {
          Utf8Split(lo, hi, &seqs);
        }
      }
    }
    Alts alts;
    if (has_ascii) alts.push_back({Intern(ascii)});
    for (const auto& seq : seqs) {
      Seq s;
      for (const Range& b : seq) s.push_back(SetOf(b.first, b.second));
      alts.push_back(std::move(s));
    }
    if (alts.size() == 1) {
      unit->insert(unit->end(), alts[0].begin(), alts[0].end());
      return Status::Ok();
    }
    STET_ASSIGN_OR_RETURN(int id, Generated(rule_name_, std::move(alts)));
    unit->push_back(Grammar::Ref(id));
    return Status::Ok();
  }

  int32_t SetOf(uint32_t lo, uint32_t hi) {
    ByteSet b;
    b.AddRange(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
    return Intern(b);
  }
  int32_t Intern(const ByteSet& b) {
    auto key = std::make_tuple(b.w[0], b.w[1], b.w[2], b.w[3]);
    auto it = set_ids_.find(key);
    if (it != set_ids_.end()) return it->second;
    const int32_t id = static_cast<int32_t>(sets_.size());
    sets_.push_back(b);
    set_ids_.emplace(key, id);
    return id;
  }

  Result<int32_t> Single(Seq unit) {
    if (unit.size() == 1) return unit[0];
    STET_ASSIGN_OR_RETURN(int id, Generated(rule_name_, Alts{std::move(unit)}));
    return Grammar::Ref(id);
  }
  // x* as R ::= x R | "" (right recursion: the matcher's stacks do not grow).
  Result<int32_t> Star(int32_t x) {
    STET_ASSIGN_OR_RETURN(int id, NewRule(rule_name_ + "~" + std::to_string(rules_.size()), false));
    defined_[id] = true;
    rules_[id] = Alts{{x, Grammar::Ref(id)}, {}};
    STET_RETURN_IF_ERROR(Count(rules_[id]));
    return Grammar::Ref(id);
  }
  Result<int32_t> Optional(Seq body) {
    STET_ASSIGN_OR_RETURN(int id, Generated(rule_name_, Alts{std::move(body), {}}));
    return Grammar::Ref(id);
  }
  Result<int> ParseCount() {
    if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') return Error("expected a number");
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = v * 10 + (s_[pos_] - '0');
      if (v > lim_.max_repeat) {
        return Error("repetition count above " + std::to_string(lim_.max_repeat));
      }
      ++pos_;
    }
    return static_cast<int>(v);
  }

  Status ApplyPostfix(Seq* unit) {
    const char c = s_[pos_++];
    if (unit->empty()) return Error(std::string("'") + c + "' after nothing");
    STET_ASSIGN_OR_RETURN(int32_t x, Single(std::move(*unit)));
    unit->clear();
    if (c == '*') {
      STET_ASSIGN_OR_RETURN(int32_t r, Star(x));
      unit->push_back(r);
      return Status::Ok();
    }
    if (c == '+') {
      STET_ASSIGN_OR_RETURN(int32_t r, Star(x));
      *unit = {x, r};
      return Status::Ok();
    }
    if (c == '?') {
      STET_ASSIGN_OR_RETURN(int32_t r, Optional({x}));
      unit->push_back(r);
      return Status::Ok();
    }
    // {m}, {m,}, {m,n}
    SkipSpace();
    STET_ASSIGN_OR_RETURN(int m, ParseCount());
    SkipSpace();
    int n = m;
    bool unbounded = false;
    if (At(',')) {
      ++pos_;
      SkipSpace();
      if (At('}')) {
        unbounded = true;
      } else {
        STET_ASSIGN_OR_RETURN(n, ParseCount());
        if (n < m) return Error("repetition {m,n} with n < m");
      }
      SkipSpace();
    }
    if (!At('}')) return Error("expected '}'");
    ++pos_;
    elements_ += m;
    if (elements_ > lim_.max_elements) return Error("repetition makes the grammar too large");
    unit->assign(m, x);
    if (unbounded) {
      STET_ASSIGN_OR_RETURN(int32_t r, Star(x));
      unit->push_back(r);
    } else if (n > m) {
      // (x (x (x)?)?)? built from the inside out.
      STET_ASSIGN_OR_RETURN(int32_t tail, Optional({x}));
      for (int i = 1; i < n - m; ++i) {
        STET_ASSIGN_OR_RETURN(tail, Optional({x, tail}));
      }
      unit->push_back(tail);
    }
    return Status::Ok();
  }

  Result<std::shared_ptr<const Grammar>> Compile(int root) {
    auto g = std::make_shared<Grammar>();
    g->limits = lim_;
    g->root = root;
    g->sets = std::move(sets_);
    g->names = names_;
    g->alts.resize(rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r) {
      for (const Seq& a : rules_[r]) {
        g->alts[r].push_back(static_cast<int32_t>(g->elems.size()));
        g->elems.insert(g->elems.end(), a.begin(), a.end());
        g->elems.push_back(Grammar::kEnd);
      }
    }
    STET_RETURN_IF_ERROR(CheckLeftRecursion());
    return std::shared_ptr<const Grammar>(std::move(g));
  }

  // Nullable rules by a worklist (linear), then the "reaches at its left"
  // graph, which must be acyclic for the matcher's expansion to terminate.
  Status CheckLeftRecursion() {
    const size_t n = rules_.size();
    std::vector<char> nullable(n, 0);
    std::vector<std::pair<int, int>> alt_of;  // alt index -> (rule, pending refs)
    std::vector<std::vector<int>> users(n);   // rule -> alts referring to it (per occurrence)
    std::vector<int> work;
    for (size_t r = 0; r < n; ++r) {
      for (const Seq& a : rules_[r]) {
        const int ai = static_cast<int>(alt_of.size());
        bool has_set = false;
        int refs = 0;
        for (int32_t e : a) {
          if (Grammar::IsRef(e)) {
            users[Grammar::RuleOf(e)].push_back(ai);
            ++refs;
          } else {
            has_set = true;
          }
        }
        alt_of.emplace_back(static_cast<int>(r), has_set ? -1 : refs);
        if (!has_set && refs == 0 && !nullable[r]) {
          nullable[r] = 1;
          work.push_back(static_cast<int>(r));
        }
      }
    }
    while (!work.empty()) {
      const int r = work.back();
      work.pop_back();
      for (int ai : users[r]) {
        auto& [rule, pending] = alt_of[ai];
        if (pending > 0 && --pending == 0 && !nullable[rule]) {
          nullable[rule] = 1;
          work.push_back(rule);
        }
      }
    }
    std::vector<std::vector<int>> left(n);
    for (size_t r = 0; r < n; ++r) {
      for (const Seq& a : rules_[r]) {
        for (int32_t e : a) {
          if (!Grammar::IsRef(e)) break;
          left[r].push_back(Grammar::RuleOf(e));
          if (!nullable[Grammar::RuleOf(e)]) break;
        }
      }
    }
    std::vector<char> color(n, 0);  // 0 new, 1 on the DFS path, 2 done
    std::vector<std::pair<int, size_t>> dfs;
    for (size_t start = 0; start < n; ++start) {
      if (color[start]) continue;
      dfs.emplace_back(static_cast<int>(start), 0);
      color[start] = 1;
      while (!dfs.empty()) {
        auto& [r, i] = dfs.back();
        if (i == left[r].size()) {
          color[r] = 2;
          dfs.pop_back();
          continue;
        }
        const int next = left[r][i++];
        if (color[next] == 1) {
          return InvalidArgument("grammar: rule '" + names_[next] +
                                 "' can reach itself without matching a character (left "
                                 "recursion, or a repetition of something that can be empty)");
        }
        if (color[next] == 0) {
          color[next] = 1;
          dfs.emplace_back(next, 0);
        }
      }
    }
    return Status::Ok();
  }

  std::string_view s_;
  size_t pos_ = 0;
  const GrammarLimits lim_;
  std::vector<Alts> rules_;
  std::vector<char> defined_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, int> ids_;
  std::vector<ByteSet> sets_;
  std::map<std::tuple<uint64_t, uint64_t, uint64_t, uint64_t>, int32_t> set_ids_;
  std::string rule_name_;
  int64_t elements_ = 0;
};

}  // namespace

Result<std::shared_ptr<const Grammar>> ParseGbnf(std::string_view text,
                                                 const GrammarLimits& limits) {
  return Parser(text, limits).Run();
}

}  // namespace stet
