// The pre-tokenizer table (regex lists per tokenizer.ggml.pre name, as llama.cpp
// assigns them, with HF's case-insensitive contraction groups spelled out so a
// Unicode case fold — 'ſ' for 's', 'K' (Kelvin) for 'k' — cannot match) and the
// PCRE2 (UTF + UCP, JIT when available) splitter. Invalid UTF-8 never matches;
// it falls into the gaps, so no byte is lost.
#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstring>

#include "tokenizer/utf8.h"

namespace stet::tok {
namespace {

// HF's "(?i:'s|'t|'re|'ve|'m|'ll|'d)" with the case folding limited to ASCII.
#define STET_CONTRACTIONS R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"

constexpr const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

const char* const kDefault[] = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Regex, R"(\p{N}+)",
                                R"([0-9][0-9][0-9])", nullptr};
const char* const kGpt2[] = {kGpt2Regex, nullptr};
const char* const kDigitsThenGpt2[] = {R"(\p{N})", kGpt2Regex, nullptr};
const char* const kLlama3[] = {
    STET_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    nullptr};
const char* const kQwen2[] = {
    STET_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    nullptr};
const char* const kQwen35[] = {
    STET_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    nullptr};
const char* const kGpt4o[] = {
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)" STET_CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)" STET_CONTRACTIONS
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    nullptr};

#undef STET_CONTRACTIONS

constexpr const char* kHfLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kHfQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kHfQwen35 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kHfGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// name, aliases, regexes, add_bos, clean_spaces, ignore_merges, hf regex
const PreTokenizerInfo kPreTokenizers[] = {
    {"default", "", kDefault, false, true, false, nullptr},
    {"gpt-2",
     "phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de a.x-4.0 mellum modern-bert mpt olmo "
     "jais exaone4",
     kGpt2, false, true, false, nullptr},
    {"trillion", "granite-docling", kGpt2, false, false, false, nullptr},
    {"llama-bpe", "llama3 llama-v3 falcon3 falcon-h1 pixtral midm-2.0 lfm2 jina-v5-nano", kLlama3,
     true, true, true, kHfLlama3},
    {"dbrx", "smaug-bpe", kLlama3, false, true, false, nullptr},
    {"qwen2", "deepseek-r1-qwen kormo f2llmv2 hunyuan solar-open", kQwen2, false, false, false,
     kHfQwen2},
    {"stablelm2", "megrez", kQwen2, false, true, false, nullptr},
    {"qwen35", "", kQwen35, false, false, false, kHfQwen35},
    {"smollm", "command-r", kDigitsThenGpt2, false, false, false, nullptr},
    {"starcoder", "refact codeshell exaone minerva-7b mellum2", kDigitsThenGpt2, false, true, false,
     nullptr},
    {"gpt-4o", "llama4 kanana2 talkie minimax-m2", kGpt4o, false, false, false, kHfGpt4o},
};

bool NameInList(std::string_view name, std::string_view list) {
  while (!list.empty()) {
    const size_t sp = list.find(' ');
    if (list.substr(0, sp) == name) return true;
    if (sp == std::string_view::npos) break;
    list.remove_prefix(sp + 1);
  }
  return false;
}

}  // namespace

const PreTokenizerInfo* FindPreTokenizer(std::string_view name) {
  for (const PreTokenizerInfo& info : kPreTokenizers) {
    if (name == info.name || NameInList(name, info.aliases)) return &info;
  }
  return nullptr;
}

std::string SupportedPreTokenizers() {
  std::string out;
  for (const PreTokenizerInfo& info : kPreTokenizers) {
    if (!out.empty()) out += ", ";
    out += info.name;
    if (info.aliases[0] != '\0') {
      std::string aliases = info.aliases;
      for (char& c : aliases) {
        if (c == ' ') c = ',';
      }
      out += " (" + aliases + ")";
    }
  }
  return out;
}

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

PreTokenizer::~PreTokenizer() = default;

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::Create(std::string_view name) {
  const PreTokenizerInfo* info = FindPreTokenizer(name);
  if (info == nullptr) {
    return InvalidArgument("unknown pre-tokenizer '" + std::string(name) +
                           "'; supported: " + SupportedPreTokenizers());
  }
  std::unique_ptr<PreTokenizer> pre(new PreTokenizer());
  for (const char* const* re = info->regexes; *re != nullptr; ++re) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    auto regex = std::make_unique<Regex>();
    regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(*re), PCRE2_ZERO_TERMINATED,
                                PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error,
                                &error_offset, nullptr);
    if (regex->code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(error, msg, sizeof(msg));
      return Internal("pre-tokenizer '" + std::string(name) + "': regex does not compile at " +
                      std::to_string(error_offset) + ": " + reinterpret_cast<const char*>(msg));
    }
    // Without JIT (unsupported CPU, or a hardened kernel) pcre2_match interprets.
    pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE);
    pre->regexes_.push_back(std::move(regex));
  }
  return pre;
}

void PreTokenizer::Split(std::string_view text, std::vector<std::string_view>* pieces) const {
  std::vector<std::string_view> current{text};
  std::vector<std::string_view> next;
  for (const auto& regex : regexes_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(regex->code, nullptr);
    next.clear();
    for (std::string_view piece : current) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t gap_start = 0;  // start of the unmatched text before the next match
      size_t pos = 0;
      while (md != nullptr && pos < piece.size()) {
        const int rc = pcre2_match(regex->code, subject, piece.size(), pos, 0, md, nullptr);
        if (rc < 0) break;  // no match, or a resource limit: the rest is one gap
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t start = ov[0], end = ov[1];
        if (end <= start) {  // an empty match: step over one symbol
          pos = start + (start < piece.size() ? Utf8SymbolLength(piece, start) : 1);
          continue;
        }
        if (start > gap_start) next.push_back(piece.substr(gap_start, start - gap_start));
        next.push_back(piece.substr(start, end - start));
        gap_start = pos = end;
      }
      if (gap_start < piece.size()) next.push_back(piece.substr(gap_start));
    }
    pcre2_match_data_free(md);
    current.swap(next);
  }
  pieces->insert(pieces->end(), current.begin(), current.end());
}

}  // namespace stet::tok
