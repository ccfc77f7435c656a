// libFuzzer target for GBNF grammars (ParseGbnf) and the matcher behind
// constrained decoding (GrammarMatcher): the input is grammar text, then
// after a NUL byte the bytes a generation offers. Any outcome is fine except a
// crash, a sanitizer report, a slow unit (every cost is metered by the
// grammar's limits) or a broken invariant: the token mask, a trie walk, equals
// the brute-force answer (each token's bytes accepted from a copy of the
// state), and a rejected byte leaves the state as it was.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar.h"
#include "engine/grammar_matcher.h"

namespace {

void Require(bool cond, const char* what) {
  if (!cond) {
    std::fprintf(stderr, "grammar_fuzz: invariant failed: %s\n", what);
    std::abort();
  }
}

const std::vector<std::string>& Vocab() {
  static const std::vector<std::string> v = {
      "",     "{",    "}",   "{\"",  "\"",   "\":",  ",",    " ",        "\n",
      "a",    "ab",   "abc", "b",    "1",    "12",   "-",    ".",        "e",
      "[",    "]",    "\\",  "true", "null", "\xC3", "\xA9", "\xC3\xA9", "\xE2\x82\xAC",
      "\x00", "ab\"", "1,",  "]}",   "x",    "xyz",  "\t"};
  return v;
}

std::vector<uint8_t> BruteMask(const stet::GrammarMatcher& m) {
  const auto& vocab = Vocab();
  std::vector<uint8_t> out(vocab.size(), 0);
  for (size_t i = 0; i < vocab.size(); ++i) {
    if (vocab[i].empty()) continue;
    stet::GrammarMatcher copy = m;
    auto r = copy.Accept(vocab[i]);
    out[i] = r.ok() && *r;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stet;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view text = in.substr(0, nul);
  const std::string_view offered = nul == std::string_view::npos ? "" : in.substr(nul + 1);
  GrammarLimits lim;  // small, so a unit stays fast: the limits are what is under test
  lim.max_rules = 512;
  lim.max_elements = 1 << 14;
  lim.max_repeat = 64;
  lim.max_stacks = 64;
  lim.max_expand_steps = 1 << 12;
  lim.max_mask_steps = 1 << 16;
  auto g = ParseGbnf(text, lim);
  if (!g.ok()) return 0;
  static const TokenTrie trie(Vocab());
  GrammarMatcher m(*g);
  if (!m.Init().ok()) return 0;
  std::vector<uint8_t> mask;
  for (size_t i = 0; i <= offered.size() && i < 64; ++i) {
    if (i % 8 == 0 && m.FillMask(trie, &mask).ok()) {
      Require(mask == BruteMask(m), "the trie walk's mask equals the brute-force mask");
    }
    if (i == offered.size()) break;
    const GrammarMatcher before = m;
    auto r = m.Accept(offered.substr(i, 1));
    if (!r.ok()) return 0;
    if (!*r) {
      std::vector<uint8_t> a, b;
      GrammarMatcher x = before;
      Require(x.FillMask(trie, &a).ok() == m.FillMask(trie, &b).ok() && a == b,
              "a rejected byte leaves the state unchanged");
      return 0;
    }
  }
  return 0;
}
