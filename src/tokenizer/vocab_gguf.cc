// VocabFromGguf: tokenizer.ggml.* metadata -> VocabData. Absent flags take
// llama.cpp's defaults for the model/pre-tokenizer; ids outside the vocabulary
// are ignored (keeping the default) as llama.cpp does; wrong value types are
// errors naming the key. Also llama.cpp's name-keyed attribute fixes (Phi-3's
// rstrip on special tokens), since GGUF stores no per-token lstrip/rstrip.
#include <algorithm>
#include <cctype>
#include <cstdint>

#include "format/gguf.h"
#include "tokenizer/vocab.h"

namespace stet {
namespace {

using gguf::IsIntegerType;
using gguf::MetaValue;
using gguf::ValueType;

std::string Describe(const MetaValue& v) {
  if (v.type() == ValueType::kArray) {
    return std::string("an array of ") + gguf::ValueTypeName(v.array_type());
  }
  return std::string("a ") + gguf::ValueTypeName(v.type());
}

// An array key of `want` element kind with at least `min_size` elements.
Result<const MetaValue*> GetArray(const gguf::GgufFile& f, const char* key, const char* want,
                                  bool (*element_ok)(ValueType), uint64_t min_size) {
  const MetaValue* v = f.Find(key);
  if (v == nullptr) return NotFound(std::string("GGUF has no ") + key);
  if (v->type() != ValueType::kArray || !element_ok(v->array_type())) {
    return InvalidArgument(std::string(key) + ": expected an array of " + want + ", found " +
                           Describe(*v));
  }
  if (v->array_size() < min_size) {
    return InvalidArgument(std::string(key) + ": has " + std::to_string(v->array_size()) +
                           " entries, fewer than the " + std::to_string(min_size) + " tokens");
  }
  return v;
}

bool IsString(ValueType t) { return t == ValueType::kString; }
bool IsNumber(ValueType t) {
  return IsIntegerType(t) || t == ValueType::kF32 || t == ValueType::kF64;
}

Result<std::string> OptionalString(const gguf::GgufFile& f, const char* key) {
  const MetaValue* v = f.Find(key);
  if (v == nullptr) return std::string();
  auto s = v->AsString();
  if (!s) return InvalidArgument(std::string(key) + ": expected a string, found " + Describe(*v));
  return std::string(*s);
}

Status ReadBool(const gguf::GgufFile& f, const char* key, bool* out) {
  const MetaValue* v = f.Find(key);
  if (v == nullptr) return Status::Ok();
  auto b = v->AsBool();
  if (!b) return InvalidArgument(std::string(key) + ": expected a bool, found " + Describe(*v));
  *out = *b;
  return Status::Ok();
}

Status ReadId(const gguf::GgufFile& f, const char* key, size_t n_tokens, int32_t* out) {
  const MetaValue* v = f.Find(key);
  if (v == nullptr) return Status::Ok();
  if (!IsIntegerType(v->type())) {
    return InvalidArgument(std::string(key) + ": expected an integer token id, found " +
                           Describe(*v));
  }
  auto id = v->AsUInt();
  // Out of range: llama.cpp keeps the default id, and so do we.
  if (id && *id < n_tokens) *out = static_cast<int32_t>(*id);
  return Status::Ok();
}

// llama.cpp sets lstrip/rstrip by model name; GGUF has no per-token attributes.
void ApplyNameKeyedAttributes(const gguf::GgufFile& f, VocabData* v) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  auto name = OptionalString(f, "general.name");
  auto arch = OptionalString(f, "general.architecture");
  const std::string model_name = name.ok() ? lower(*name) : "";
  const std::string general_arch = arch.ok() ? *arch : "";
  const size_t n = v->tokens.size();
  auto find = [&](std::string_view text) -> int32_t {
    for (size_t i = 0; i < n; ++i) {
      if (v->tokens[i] == text) return static_cast<int32_t>(i);
    }
    return -1;
  };
  auto set = [&](std::vector<uint8_t>* flags, int32_t id, bool value) {
    if (id < 0) return;
    flags->resize(n, 0);
    (*flags)[id] = value ? 1 : 0;
  };
  const bool jina = v->pre.find("jina-v2-de") != std::string::npos ||
                    v->pre.find("jina-v2-es") != std::string::npos ||
                    v->pre.find("jina-v2-code") != std::string::npos ||
                    general_arch.find("nomic-bert-moe") != std::string::npos ||
                    general_arch.find("jina-bert-v3") != std::string::npos;
  if (jina) {
    set(&v->lstrip, find("<mask>"), true);
  } else if (model_name.find("phi-3") != std::string::npos ||
             model_name.find("phi3") != std::string::npos) {
    ApplySpecialTokenConventions(v);  // the special set is taken after those overrides
    for (size_t i = 0; i < n; ++i) {
      const TokenType t = v->token_types[i];
      if (t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) {
        set(&v->rstrip, static_cast<int32_t>(i), true);
      }
    }
    set(&v->rstrip, find("</s>"), true);
    for (const char* text : {"<unk>", "<s>", "<|endoftext|>"}) set(&v->rstrip, find(text), false);
  } else if (model_name.find("modern-bert") != std::string::npos) {
    set(&v->lstrip, find("[MASK]"), true);
  }
}

}  // namespace

Result<VocabData> VocabFromGguf(const gguf::GgufFile& f) {
  VocabData v;
  const MetaValue* model = f.Find("tokenizer.ggml.model");
  if (model == nullptr) return NotFound("GGUF has no tokenizer.ggml.model (no vocabulary)");
  auto model_name = model->AsString();
  if (!model_name) {
    return InvalidArgument("tokenizer.ggml.model: expected a string, found " + Describe(*model));
  }
  v.model = std::string(*model_name);
  if (v.model != "llama" && v.model != "gpt2") {
    return Unimplemented("tokenizer.ggml.model '" + v.model +
                         "' is not supported (supported: llama = SentencePiece, gpt2 = "
                         "byte-level BPE)");
  }
  STET_ASSIGN_OR_RETURN(v.pre, OptionalString(f, "tokenizer.ggml.pre"));

  STET_ASSIGN_OR_RETURN(const MetaValue* tokens,
                        GetArray(f, "tokenizer.ggml.tokens", "strings", IsString, 0));
  const uint64_t n = tokens->array_size();
  if (n == 0) return InvalidArgument("tokenizer.ggml.tokens: the array is empty");
  if (n > static_cast<uint64_t>(INT32_MAX)) {
    return OutOfRange("tokenizer.ggml.tokens: " + std::to_string(n) +
                      " tokens do not fit int32 ids");
  }
  v.tokens.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view text = tokens->ArrayString(i);
    // As llama.cpp: an empty token would never match; give it a unique name.
    v.tokens.emplace_back(text.empty() ? "[EMPTY_" + std::to_string(i) + "]" : std::string(text));
  }

  if (f.Find("tokenizer.ggml.scores") != nullptr) {
    STET_ASSIGN_OR_RETURN(const MetaValue* scores,
                          GetArray(f, "tokenizer.ggml.scores", "numbers", IsNumber, n));
    v.scores.resize(n);
    for (uint64_t i = 0; i < n; ++i) v.scores[i] = static_cast<float>(scores->ArrayFloat(i));
  }
  if (f.Find("tokenizer.ggml.token_type") != nullptr) {
    STET_ASSIGN_OR_RETURN(const MetaValue* types,
                          GetArray(f, "tokenizer.ggml.token_type", "integers", IsIntegerType, n));
    v.token_types.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      const int64_t t = types->ArrayInt(i);
      v.token_types[i] = t >= 0 && t <= 6 ? static_cast<TokenType>(t) : TokenType::kUndefined;
    }
  }
  if (v.model == "gpt2") {
    STET_ASSIGN_OR_RETURN(const MetaValue* merges,
                          GetArray(f, "tokenizer.ggml.merges", "strings", IsString, 0));
    v.merges.reserve(merges->array_size());
    for (uint64_t i = 0; i < merges->array_size(); ++i) {
      const std::string_view m = merges->ArrayString(i);
      const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
      if (sp == std::string_view::npos) {
        v.merges.emplace_back();  // malformed: keeps its rank, never matches
      } else {
        v.merges.emplace_back(std::string(m.substr(0, sp)), std::string(m.substr(sp + 1)));
      }
    }
  }

  ApplyVocabDefaults(&v);
  STET_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.bos_token_id", n, &v.bos_id));
  STET_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.eos_token_id", n, &v.eos_id));
  STET_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.unknown_token_id", n, &v.unk_id));
  STET_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.padding_token_id", n, &v.pad_id));
  STET_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.eot_token_id", n, &v.eot_id));
  STET_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.eom_token_id", n, &v.eom_id));
  STET_RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_bos_token", &v.add_bos));
  STET_RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_eos_token", &v.add_eos));
  STET_RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_space_prefix", &v.add_space_prefix));
  ApplyNameKeyedAttributes(f, &v);
  return v;
}

}  // namespace stet
