// Tokenizer: ties the vocabulary to its algorithm. Encode = special-token split,
// then SentencePiece (with the space prefix after each special token, as
// llama.cpp) or pre-tokenizer + byte-level BPE per text fragment. Token pieces
// are rendered once at Create, so decoding is a table lookup.
#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/special_split.h"
#include "tokenizer/spm.h"
#include "tokenizer/token_map.h"
#include "tokenizer/utf8.h"

namespace stet {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 '▁'

// "<0xAB>" -> 0xAB, or -1.
int ParseByteToken(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(text[3]), lo = hex(text[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string RenderPiece(const std::string& text, TokenType type, bool spm) {
  switch (type) {
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUserDefined:
      return text;
    case TokenType::kNormal: {
      if (!spm) return tok::ByteLevelDecode(text);
      std::string out;
      out.reserve(text.size());
      for (size_t pos = 0; pos < text.size();) {
        if (text.compare(pos, kSpmSpace.size(), kSpmSpace) == 0) {
          out.push_back(' ');
          pos += kSpmSpace.size();
        } else {
          out.push_back(text[pos++]);
        }
      }
      return out;
    }
    case TokenType::kByte: {
      const int b = ParseByteToken(text);
      return b < 0 ? text : std::string(1, static_cast<char>(b));
    }
    case TokenType::kUnused:
    case TokenType::kUndefined:
      break;
  }
  return "";
}

// HF's clean_up_tokenization_spaces, as llama.cpp applies it: three passes,
// each reading the previous pass's output.
std::string CleanUpSpaces(const std::string& text) {
  // " ?" " !" " ." " ," -> no space.
  std::string a;
  a.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char x = text[i];
    if (i > 0 && text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) {
      a.pop_back();
    }
    a.push_back(x);
  }
  // " ' " -> "'" (the space after the apostrophe is dropped and no longer
  // counts as the next character's left neighbour).
  std::string b;
  b.reserve(a.size());
  char prev = '\0';
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i];
    if (i > 0 && x == '\'' && i + 1 < a.size() && prev == ' ' && a[i + 1] == ' ') {
      b.pop_back();
      b.push_back(x);
      ++i;
      prev = '\0';
      continue;
    }
    b.push_back(x);
    prev = x;
  }
  // " 's" " 'm" " 're" " 've" -> no space.
  std::string c;
  c.reserve(b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    const char x = b[i];
    if (i > 0 && b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      const char x2 = i + 2 < b.size() ? b[i + 2] : '\0';
      if (x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) {
        c.pop_back();
      }
    }
    c.push_back(x);
  }
  return c;
}

}  // namespace

Tokenizer::Tokenizer(VocabData vocab) : vocab_(std::move(vocab)) {}
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::Create(VocabData vocab) {
  STET_RETURN_IF_ERROR(ValidateVocab(vocab));
  ApplySpecialTokenConventions(&vocab);
  std::unique_ptr<Tokenizer> t(new Tokenizer(std::move(vocab)));
  const VocabData& v = t->vocab_;
  t->is_spm_ = v.model == "llama";
  t->map_ = std::make_unique<tok::TokenMap>(v.tokens);
  t->splitter_ = std::make_unique<tok::SpecialSplitter>(v);
  if (t->is_spm_) {
    t->spm_ = std::make_unique<tok::SpmEncoder>(*t->map_, v.scores, v.unk_id);
  } else {
    STET_ASSIGN_OR_RETURN(t->pre_, tok::PreTokenizer::Create(v.pre));
    t->bpe_ = std::make_unique<tok::BpeEncoder>(*t->map_, v.merges, v.ignore_merges, v.unk_id);
  }
  t->pieces_.reserve(v.tokens.size());
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    t->pieces_.push_back(RenderPiece(v.tokens[i], v.token_types[i], t->is_spm_));
  }
  t->eog_ids_ = EndOfGenerationIds(v);
  return t;
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  std::vector<int32_t> out;
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos_id);
  std::vector<tok::Fragment> fragments;
  splitter_->Split(text, parse_special, &fragments);
  bool prev_special = true;  // SPM: the first fragment gets the space prefix too
  for (const tok::Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      prev_special = true;
      continue;
    }
    EncodeText(text.substr(f.offset, f.length), prev_special, &out);
    prev_special = false;
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos_id);
  return out;
}

void Tokenizer::EncodeText(std::string_view text, bool after_special,
                           std::vector<int32_t>* out) const {
  if (is_spm_) {
    std::string normalized;
    normalized.reserve(text.size() + 16);
    if (vocab_.add_space_prefix && after_special) normalized.append(kSpmSpace);
    for (char c : text) {
      if (c == ' ') {
        normalized.append(kSpmSpace);
      } else {
        normalized.push_back(c);
      }
    }
    spm_->Encode(normalized, out);
    return;
  }
  std::vector<std::string_view> words;
  pre_->Split(text, &words);
  std::string encoded;
  for (std::string_view word : words) {
    encoded.clear();
    tok::ByteLevelEncode(word, &encoded);
    bpe_->EncodeWord(encoded, out);
  }
}

TokenType Tokenizer::type(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return TokenType::kUndefined;
  return vocab_.token_types[id];
}

std::string_view Tokenizer::TokenText(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return {};
  return vocab_.tokens[id];
}

std::string Tokenizer::TokenToPiece(int32_t id, bool render_special) const {
  if (id < 0 || id >= n_vocab()) return "";
  const TokenType t = vocab_.token_types[id];
  if (!render_special && (t == TokenType::kControl || t == TokenType::kUnknown)) return "";
  return pieces_[id];
}

std::string Tokenizer::Decode(const std::vector<int32_t>& ids, bool render_special,
                              bool clean_up_spaces) const {
  std::string out;
  bool strip_space = is_spm_ && vocab_.add_space_prefix;
  for (int32_t id : ids) {
    std::string piece = TokenToPiece(id, render_special);
    if (strip_space) {
      if (id == vocab_.bos_id && piece.empty()) continue;
      if (!piece.empty() && piece[0] == ' ') piece.erase(0, 1);
      strip_space = false;
    }
    out += piece;
  }
  if (clean_up_spaces && vocab_.clean_spaces) out = CleanUpSpaces(out);
  return out;
}

bool Tokenizer::IsEog(int32_t id) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

std::optional<int32_t> Tokenizer::FindToken(std::string_view text) const {
  const int32_t id = map_->Find(text);
  if (id < 0) return std::nullopt;
  return id;
}

}  // namespace stet
