// Tokenizer: text <-> token ids for SentencePiece ("llama") and byte-level BPE
// ("gpt2") vocabularies, matching llama.cpp token for token. Immutable after
// Create, so every method is safe to call from many threads at once; no input
// text or id (however malformed) makes it crash.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/vocab.h"

namespace stet {

namespace tok {
class BpeEncoder;
class PreTokenizer;
class SpecialSplitter;
class SpmEncoder;
class TokenMap;
}  // namespace tok

class Tokenizer {
 public:
  // Validates the vocabulary (ValidateVocab), applies the special-token
  // conventions (ApplySpecialTokenConventions) and builds the lookup tables.
  static Result<std::unique_ptr<Tokenizer>> Create(VocabData vocab);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // add_special: BOS/EOS as the vocabulary's add_bos/add_eos say.
  // parse_special: control tokens written in the text ("<|im_start|>") become
  // their ids (llama.cpp's parse_special); user-defined tokens always do.
  std::vector<int32_t> Encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes a token stands for (byte-level BPE unmapped, SPM '▁' -> ' ',
  // <0xAB> -> that byte). Control and unknown tokens render as their text only
  // when render_special; unused tokens and ids out of range render as "".
  std::string TokenToPiece(int32_t id, bool render_special = false) const;

  // Concatenated pieces. SentencePiece: the space the encoder's space prefix
  // added is stripped from the first piece (after a leading BOS that renders
  // empty), so Decode(Encode(s, true, false)) == s. clean_up_spaces applies
  // HF's clean_up_tokenization_spaces rules ("a ." -> "a.", " 's" -> "'s")
  // when the vocabulary asks for them; off by default because it loses text.
  std::string Decode(const std::vector<int32_t>& ids, bool render_special = false,
                     bool clean_up_spaces = false) const;

  int32_t bos() const { return vocab_.bos_id; }
  int32_t eos() const { return vocab_.eos_id; }
  int32_t unk() const { return vocab_.unk_id; }
  int32_t pad() const { return vocab_.pad_id; }
  int32_t eot() const { return vocab_.eot_id; }
  int32_t eom() const { return vocab_.eom_id; }
  bool add_bos() const { return vocab_.add_bos; }
  int32_t n_vocab() const { return static_cast<int32_t>(vocab_.tokens.size()); }

  // End of generation: eos, eot, eom and tokens like <|im_end|>, <|endoftext|>.
  bool IsEog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
  bool IsControl(int32_t id) const { return type(id) == TokenType::kControl; }
  // kUndefined for ids out of range.
  TokenType type(int32_t id) const;
  // The token's text as stored in the vocabulary ("" for ids out of range).
  std::string_view TokenText(int32_t id) const;
  std::optional<int32_t> FindToken(std::string_view text) const;

  const VocabData& vocab() const { return vocab_; }

 private:
  explicit Tokenizer(VocabData vocab);
  void EncodeText(std::string_view text, bool after_special, std::vector<int32_t>* out) const;

  VocabData vocab_;
  bool is_spm_ = false;
  std::vector<std::string> pieces_;  // TokenToPiece(id, true)
  std::vector<int32_t> eog_ids_;     // sorted
  std::unique_ptr<tok::TokenMap> map_;
  std::unique_ptr<tok::SpecialSplitter> splitter_;
  std::unique_ptr<tok::SpmEncoder> spm_;
  std::unique_ptr<tok::BpeEncoder> bpe_;
  std::unique_ptr<tok::PreTokenizer> pre_;
};

}  // namespace stet
