// Source-independent vocabulary rules: per-model defaults, llama.cpp's
// text-based special-token conventions (which tokens are control, which end
// generation) and structural validation. Both loaders and Tokenizer::Create go
// through these, so a GGUF and a tokenizer.json of one model agree.
#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "tokenizer/pretokenizer.h"

namespace stet {
namespace {

// Texts llama.cpp treats as end of turn (eot detection), in preference order.
constexpr std::string_view kEotTexts[] = {"<|eot_id|>",
                                          "<|im_end|>",
                                          "<|end|>",
                                          "<end_of_turn>",
                                          "<|endoftext|>",
                                          "<|end_of_text|>",
                                          "<EOT>",
                                          "_<EOT>",
                                          "[EOT]",
                                          "<\xEF\xBD\x9C"
                                          "end\xE2\x96\x81"
                                          "of\xE2\x96\x81"
                                          "sentence\xEF\xBD\x9C>",
                                          "<end_of_utterance>"};

// Texts whose tokens end generation.
constexpr std::string_view kEogTexts[] = {"<|eot_id|>",
                                          "<|im_end|>",
                                          "<|end|>",
                                          "<|return|>",
                                          "<|call|>",
                                          "<|flush|>",
                                          "<|calls|>",
                                          "<end_of_turn>",
                                          "<|endoftext|>",
                                          "</s>",
                                          "<|eom_id|>",
                                          "<EOT>",
                                          "_<EOT>",
                                          "[EOT]",
                                          "[EOS]",
                                          "<|end_of_text|>",
                                          "<end_of_utterance>",
                                          "<eos>",
                                          "<turn|>",
                                          "<|tool_response>",
                                          "<\xEF\xBD\x9C"
                                          "end\xE2\x96\x81"
                                          "of\xE2\x96\x81"
                                          "sentence\xEF\xBD\x9C>",
                                          "[e~["};

// FIM markers (llama.cpp makes the first found of each kind a control token;
// pad, repo and file-separator also end generation).
constexpr std::string_view kFimPre[] = {"<|fim_prefix|>",
                                        "<fim-prefix>",
                                        "<fim_prefix>",
                                        "<\xEF\xBD\x9C"
                                        "fim\xE2\x96\x81"
                                        "begin\xEF\xBD\x9C>",
                                        "<PRE>",
                                        "\xE2\x96\x81<PRE>",
                                        "<|code_prefix|>",
                                        "<|prefix|>"};
constexpr std::string_view kFimSuf[] = {"<|fim_suffix|>",
                                        "<fim-suffix>",
                                        "<fim_suffix>",
                                        "<\xEF\xBD\x9C"
                                        "fim\xE2\x96\x81"
                                        "hole\xEF\xBD\x9C>",
                                        "<SUF>",
                                        "\xE2\x96\x81<SUF>",
                                        "<|code_suffix|>",
                                        "<|suffix|>"};
constexpr std::string_view kFimMid[] = {"<|fim_middle|>",
                                        "<fim-middle>",
                                        "<fim_middle>",
                                        "<\xEF\xBD\x9C"
                                        "fim\xE2\x96\x81"
                                        "end\xEF\xBD\x9C>",
                                        "<MID>",
                                        "\xE2\x96\x81<MID>",
                                        "<|code_middle|>",
                                        "<|middle|>"};
constexpr std::string_view kFimPad[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRep[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                        "<reponame>"};
constexpr std::string_view kFimSep[] = {"<|file_sep|>"};

// gpt-oss channel markers are always rendered: user-defined, not control.
constexpr std::string_view kAlwaysRendered[] = {"<|channel|>", "<|message|>", "<|start|>",
                                                "<|constrain|>"};

class TextIndex {
 public:
  explicit TextIndex(const std::vector<std::string>& tokens) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      map_.emplace(std::string_view(tokens[i]), static_cast<int32_t>(i));
    }
  }
  int32_t Find(std::string_view t) const {
    auto it = map_.find(t);
    return it == map_.end() ? -1 : it->second;
  }
  template <size_t N>
  int32_t FindFirst(const std::string_view (&texts)[N], std::string_view skip = {}) const {
    for (std::string_view t : texts) {
      if (t == skip) continue;
      const int32_t id = Find(t);
      if (id >= 0) return id;
    }
    return -1;
  }

 private:
  std::unordered_map<std::string_view, int32_t> map_;
};

// gpt-oss (o200k_harmony) and solar-open: "<|end|>" is not an end of generation.
bool EndIsNotEog(const TextIndex& index) {
  const bool has_end = index.Find("<|end|>") >= 0;
  const bool has_return = index.Find("<|return|>") >= 0;
  const bool has_call = index.Find("<|call|>") >= 0 || index.Find("<|calls|>") >= 0;
  const bool has_flush = index.Find("<|flush|>") >= 0;
  return has_end && has_call && (has_return || has_flush);
}

// Gemma 4 and PaddleOCR: "</s>" is an ordinary token there.
bool SlashSIsNotEog(const TextIndex& index) {
  return index.Find("<|tool_response>") >= 0 && index.Find("</s>") >= 0;
}

std::string_view EogSkip(const TextIndex& index, std::string_view text) {
  if (text == "<|end|>" && EndIsNotEog(index)) return text;
  if (text == "</s>" && SlashSIsNotEog(index)) return text;
  return {};
}

bool InRange(int32_t id, size_t n) { return id >= 0 && static_cast<size_t>(id) < n; }

}  // namespace

void ApplyVocabDefaults(VocabData* vocab) {
  const size_t n = vocab->tokens.size();
  if (vocab->model == "llama") {
    vocab->pre = "default";
    vocab->add_bos = true;
    vocab->add_eos = false;
    vocab->add_space_prefix = true;
    vocab->clean_spaces = false;
    vocab->ignore_merges = false;
    if (vocab->bos_id < 0 && InRange(1, n)) vocab->bos_id = 1;
    if (vocab->eos_id < 0 && InRange(2, n)) vocab->eos_id = 2;
    if (vocab->unk_id < 0 && InRange(0, n)) vocab->unk_id = 0;
  } else if (vocab->model == "gpt2") {
    if (vocab->pre.empty()) vocab->pre = "default";
    vocab->add_eos = false;
    vocab->add_space_prefix = false;
    if (const tok::PreTokenizerInfo* info = tok::FindPreTokenizer(vocab->pre)) {
      vocab->add_bos = info->add_bos;
      vocab->clean_spaces = info->clean_spaces;
      vocab->ignore_merges = info->ignore_merges;
    }
  }
}

void ApplySpecialTokenConventions(VocabData* vocab) {
  const size_t n = vocab->tokens.size();
  if (vocab->token_types.size() != n) vocab->token_types.assign(n, TokenType::kNormal);
  const TextIndex index(vocab->tokens);
  auto make_control = [&](int32_t id) {
    if (id >= 0) vocab->token_types[id] = TokenType::kControl;
  };
  const std::string_view end_skip = EndIsNotEog(index) ? "<|end|>" : "";
  if (vocab->eot_id < 0) vocab->eot_id = index.FindFirst(kEotTexts, end_skip);
  make_control(vocab->eot_id);
  if (vocab->eom_id < 0) vocab->eom_id = index.Find("<|eom_id|>");
  make_control(vocab->eom_id);
  make_control(index.FindFirst(kFimPre));
  make_control(index.FindFirst(kFimSuf));
  make_control(index.FindFirst(kFimMid));
  make_control(index.FindFirst(kFimPad));
  make_control(index.FindFirst(kFimRep));
  make_control(index.FindFirst(kFimSep));
  for (std::string_view text : kEogTexts) {
    if (!EogSkip(index, text).empty()) continue;
    make_control(index.Find(text));
  }
  for (std::string_view text : kAlwaysRendered) {
    const int32_t id = index.Find(text);
    if (id >= 0) vocab->token_types[id] = TokenType::kUserDefined;
  }
  if (EndIsNotEog(index)) vocab->token_types[index.Find("<|end|>")] = TokenType::kUserDefined;
  if (SlashSIsNotEog(index)) vocab->token_types[index.Find("</s>")] = TokenType::kNormal;
}

std::vector<int32_t> EndOfGenerationIds(const VocabData& vocab) {
  const TextIndex index(vocab.tokens);
  std::vector<int32_t> ids;
  const size_t n = vocab.tokens.size();
  for (int32_t id : {vocab.eos_id, vocab.eot_id, vocab.eom_id, index.FindFirst(kFimPad),
                     index.FindFirst(kFimRep), index.FindFirst(kFimSep)}) {
    if (InRange(id, n)) ids.push_back(id);
  }
  for (std::string_view text : kEogTexts) {
    if (!EogSkip(index, text).empty()) continue;
    const int32_t id = index.Find(text);
    if (id >= 0) ids.push_back(id);
  }
  if (EndIsNotEog(index)) {
    const int32_t end = index.Find("<|end|>");
    ids.erase(std::remove(ids.begin(), ids.end(), end), ids.end());
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

Status ValidateVocab(const VocabData& vocab) {
  if (vocab.model != "llama" && vocab.model != "gpt2") {
    return Unimplemented("tokenizer model '" + vocab.model +
                         "' is not supported (expected 'llama' = SentencePiece or 'gpt2' = "
                         "byte-level BPE)");
  }
  const size_t n = vocab.tokens.size();
  if (n == 0) return InvalidArgument("vocabulary has no tokens");
  if (n > static_cast<size_t>(INT32_MAX)) {
    return OutOfRange("vocabulary has " + std::to_string(n) + " tokens, more than int32 ids hold");
  }
  auto check_size = [&](size_t size, const char* what) -> Status {
    if (size != 0 && size != n) {
      return InvalidArgument(std::string(what) + " has " + std::to_string(size) +
                             " entries, expected one per token (" + std::to_string(n) + ")");
    }
    return Status::Ok();
  };
  STET_RETURN_IF_ERROR(check_size(vocab.scores.size(), "scores"));
  STET_RETURN_IF_ERROR(check_size(vocab.token_types.size(), "token types"));
  STET_RETURN_IF_ERROR(check_size(vocab.lstrip.size(), "lstrip flags"));
  STET_RETURN_IF_ERROR(check_size(vocab.rstrip.size(), "rstrip flags"));
  for (size_t i = 0; i < vocab.token_types.size(); ++i) {
    const auto t = static_cast<int32_t>(vocab.token_types[i]);
    if (t < 0 || t > 6) {
      return InvalidArgument("token " + std::to_string(i) + " has type " + std::to_string(t) +
                             ", expected 0..6");
    }
  }
  const std::pair<const char*, int32_t> ids[] = {{"bos", vocab.bos_id}, {"eos", vocab.eos_id},
                                                 {"unk", vocab.unk_id}, {"pad", vocab.pad_id},
                                                 {"eot", vocab.eot_id}, {"eom", vocab.eom_id}};
  for (const auto& [name, id] : ids) {
    if (id < -1 || (id >= 0 && static_cast<size_t>(id) >= n)) {
      return OutOfRange(std::string(name) + " token id " + std::to_string(id) +
                        " is outside the vocabulary of " + std::to_string(n));
    }
  }
  if (vocab.add_bos && vocab.bos_id < 0) {
    return InvalidArgument("add_bos is set but the vocabulary has no bos token");
  }
  if (vocab.add_eos && vocab.eos_id < 0) {
    return InvalidArgument("add_eos is set but the vocabulary has no eos token");
  }
  std::unordered_map<std::string_view, size_t> seen;
  seen.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (vocab.tokens[i].empty()) return InvalidArgument("token " + std::to_string(i) + " is empty");
    auto [it, inserted] = seen.emplace(vocab.tokens[i], i);
    if (!inserted) {
      return InvalidArgument("duplicate token text '" + vocab.tokens[i] + "' at ids " +
                             std::to_string(it->second) + " and " + std::to_string(i));
    }
  }
  if (vocab.model == "gpt2" && tok::FindPreTokenizer(vocab.pre) == nullptr) {
    return InvalidArgument("unknown pre-tokenizer '" + vocab.pre +
                           "'; supported: " + tok::SupportedPreTokenizers());
  }
  return Status::Ok();
}

}  // namespace stet
