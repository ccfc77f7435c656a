// Reading an answer's reasoning block, content and calls, whole or by prefix.
// Every cut a prefix makes is one the whole answer makes too (answer_split.h).
#include "server/structured/answer_split.h"

#include <algorithm>

#include "server/structured/tool_call_json.h"

namespace stet::server {

namespace {

using tool_json::MarkerBound;
using tool_json::npos;
using tool_json::SkipSpace;

// Where a reasoning block lies in an answer (or a prefix of one).
struct Block {
  enum State { kUndecided, kNone, kOpen, kClosed } state = kNone;
  size_t begin = 0;  // its text's start
  size_t end = 0;    // its text's end (kOpen on a prefix: what is certain)
  size_t rest = 0;   // where the content starts (kClosed)
};

// `whole`: `s` is the whole answer (nothing is undecided, nothing held back).
Block FindBlock(const ReasoningSyntax& r, const std::string& s, bool whole) {
  Block b;
  const size_t p = SkipSpace(s, 0);
  const size_t n = std::min(r.open.size(), s.size() - p);
  if (n == r.open.size() && s.compare(p, n, r.open) == 0) {
    b.begin = p + n;
  } else if (!whole && s.compare(p, n, r.open, 0, n) == 0) {
    b.state = Block::kUndecided;  // blanks, or the open tag begun
    return b;
  } else if (!r.starts_inside) {
    return b;  // kNone
  }
  const size_t close = s.find(r.close, b.begin);
  if (close == npos) {
    b.state = Block::kOpen;
    b.end = whole ? s.size() : std::max(b.begin, MarkerBound(s, r.close));
    b.rest = s.size();
    return b;
  }
  b.state = Block::kClosed;
  b.end = close;
  b.rest = SkipSpace(s, close + r.close.size());
  return b;
}

// The length of the longest common prefix of `a` and `b`, cut back to a
// character boundary of `b`.
size_t CommonPrefix(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  while (n > 0 && n < b.size() && (static_cast<unsigned char>(b[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

ParsedAnswer SplitAnswer(const AnswerSyntax& s, const std::string& raw, const std::string& text,
                         int choice) {
  std::optional<std::string> reasoning;
  size_t text_rest = 0, raw_rest = 0;
  if (s.reasoning) {
    const Block t = FindBlock(*s.reasoning, text, /*whole=*/true);
    if (t.state != Block::kNone) {
      reasoning = text.substr(t.begin, t.end - t.begin);
      text_rest = t.rest;
      const Block r = FindBlock(*s.reasoning, raw, /*whole=*/true);
      raw_rest = r.state == Block::kNone ? 0 : r.rest;
    }
  }
  ParsedAnswer out;
  if (s.format) {
    out = ParseToolCalls(*s.format, raw.substr(raw_rest), text.substr(text_rest), s.tools, s.seed,
                         choice);
  } else {
    out.content = text.substr(text_rest);
  }
  out.reasoning = std::move(reasoning);
  return out;
}

SafeParts SafePrefix(const AnswerSyntax& s, const std::string& raw, const std::string& text) {
  SafeParts out;
  size_t text_rest = 0, raw_rest = 0;
  if (s.reasoning) {
    const Block t = FindBlock(*s.reasoning, text, /*whole=*/false);
    if (t.state == Block::kUndecided) return out;
    out.block = t.state != Block::kNone;
    if (out.block) out.reasoning = text.substr(t.begin, t.end - t.begin);
    if (t.state == Block::kOpen) return out;
    if (t.state == Block::kClosed) {
      const Block r = FindBlock(*s.reasoning, raw, /*whole=*/false);
      if (r.state != Block::kClosed) return out;
      text_rest = t.rest;
      raw_rest = r.rest;
    }
  }
  const std::string content = text.substr(text_rest);
  if (!s.format) {
    out.content = content;
    return out;
  }
  const std::string calls_raw = raw.substr(raw_rest);
  const size_t bound = s.format->CallBound(calls_raw);
  if (bound == npos) {  // no call can follow: the content is the text
    out.content = content;
    return out;
  }
  // Were calls to follow, the content would be this, trimmed (ParseToolCalls).
  const std::string before = tool_json::Trim(calls_raw.substr(0, bound));
  out.content = content.substr(0, CommonPrefix(before, content));
  return out;
}

bool EndsInsideReasoning(const ReasoningSyntax& r, const std::string& prompt) {
  const size_t open = prompt.rfind(r.open);
  if (open == npos) return false;
  const size_t close = prompt.rfind(r.close);
  return close == npos || close < open;
}

}  // namespace stet::server
