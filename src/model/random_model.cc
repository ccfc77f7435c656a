// Random-weight models of real shapes (random_model.h). Every value is a pure function of
// (seed, tensor name, element index): Philox4x32 counters, Box-Muller from basic IEEE
// operations only (no libm), then the reference quantizers — so the bytes are the same on
// any machine and any thread count. The vocabulary is synthetic but loadable by stet and
// llama.cpp: GPT-2 byte tokens, merges that each build a new token from two held ones.
#include "model/random_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <unordered_set>
#include <vector>

#include "base/check.h"
#include "base/hash.h"
#include "base/rng.h"
#include "base/thread_pool.h"
#include "model/quantize_model.h"
#include "numerics/math.h"
#include "numerics/quadrant.h"
#include "numerics/quantize.h"

namespace stet {

namespace {

constexpr double kWeightStd = 0.02;
constexpr double kPi = 3.141592653589793;

// Hyper-parameters as published in each model's config.json (Hugging Face).
const RandomModelShape kShapes[] = {
    {"smollm2-135m", "SmolLM2-135M", "llama", 30, 576, 9, 3, 1536, 49152, 8192, 100000.0, 1e-5f,
     false, RandomVocabStyle::kSmolLm},
    {"smollm2-360m", "SmolLM2-360M", "llama", 32, 960, 15, 5, 2560, 49152, 8192, 100000.0, 1e-5f,
     false, RandomVocabStyle::kSmolLm},
    {"qwen2.5-0.5b", "Qwen2.5-0.5B", "qwen2", 24, 896, 14, 2, 4864, 151936, 32768, 1000000.0, 1e-6f,
     false, RandomVocabStyle::kQwen2},
    {"llama-3.2-1b", "Llama-3.2-1B", "llama", 16, 2048, 32, 8, 8192, 128256, 131072, 500000.0,
     1e-5f, true, RandomVocabStyle::kLlama3},
    {"llama-3.2-3b", "Llama-3.2-3B", "llama", 28, 3072, 24, 8, 8192, 128256, 131072, 500000.0,
     1e-5f, true, RandomVocabStyle::kLlama3},
    {"llama-3.1-8b", "Llama-3.1-8B", "llama", 32, 4096, 32, 8, 14336, 128256, 131072, 500000.0,
     1e-5f, true, RandomVocabStyle::kLlama3, 0, 0, 0, 8.0},
    // Mixtures of experts people run on CPUs: Qwen3-30B-A3B (48 layers of 128 experts of
    // 768, 8 per token; 30.5 B parameters, ~17 GiB as q4_k) and OLMoE-1B-7B's dimensions
    // (16 layers of 64 experts of 1024, 8 per token; 6.9 B, ~4 GiB) in the qwen3moe
    // architecture, which differs from OLMoE's only in where the q/k norms apply.
    {"qwen3-30b-a3b", "Qwen3-30B-A3B", "qwen3moe", 48, 2048, 32, 4, 768, 151936, 40960, 1000000.0,
     1e-6f, false, RandomVocabStyle::kQwen2, 128, 8, 128},
    {"olmoe-1b-7b", "OLMoE-1B-7B", "qwen3moe", 16, 2048, 16, 16, 1024, 50304, 4096, 10000.0, 1e-5f,
     false, RandomVocabStyle::kQwen2, 64, 8},
    // Small enough for unit tests; K = 256 / 512 so K-quants need no fallback.
    {"tiny", "tiny", "llama", 2, 256, 4, 2, 512, 1024, 2048, 10000.0, 1e-5f, false,
     RandomVocabStyle::kSmolLm},
    // A qwen3moe for tests: 8 experts of width 256 per layer, 2 per token.
    {"moe-tiny", "moe-tiny", "qwen3moe", 2, 256, 4, 2, 256, 1024, 2048, 1000000.0, 1e-6f, false,
     RandomVocabStyle::kQwen2, 8, 2},
};

// The 256-element super-block types (K-quants, iq4_xs).
bool IsKQuant(DType t) { return GetDTypeTraits(static_cast<uint32_t>(t))->block_elems == kQKK; }
bool IsFloat(DType t) { return GetDTypeTraits(static_cast<uint32_t>(t))->block_elems == 1; }

// ---------------------------------------------------------------------------------------
// Weights.

uint32_t StreamOf(const std::string& name) {
  const uint64_t h = Fnv1a64(name.data(), name.size());
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// ln(x) for x in (0, 1] and (sin, cos)(2*pi*u) for u in [0, 1), from basic IEEE double
// operations in a fixed order (no libm, no table): ~1e-9 accurate, plenty for random
// weights, and bit-identical on every machine. stet's LogD/SinCosD would also do, at a
// few times the cost — and drawing dominates writing a 1B-parameter model.
double LnUnit(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1): exact
  if (m < 0.70710678118654752) {
    m *= 2.0;
    e -= 1;
  }
  const double s = (m - 1.0) / (m + 1.0);  // |s| <= 0.172
  const double s2 = s * s;
  const double series =
      1.0 + s2 * (1.0 / 3 + s2 * (1.0 / 5 + s2 * (1.0 / 7 + s2 * (1.0 / 9 + s2 * (1.0 / 11)))));
  return e * 0.69314718055994531 + 2.0 * s * series;
}

void SinCos2Pi(double u, double* sin_out, double* cos_out) {
  const double t = 4.0 * u;  // exact
  const int quadrant = static_cast<int>(t);
  const double x = (t - quadrant) * (kPi / 2);  // [0, pi/2)
  const double x2 = x * x;
  const double s =
      x * (1.0 -
           x2 / 6 *
               (1.0 -
                x2 / 20 * (1.0 - x2 / 42 * (1.0 - x2 / 72 * (1.0 - x2 / 110 * (1.0 - x2 / 156))))));
  const double c =
      1.0 -
      x2 / 2 *
          (1.0 - x2 / 12 * (1.0 - x2 / 30 * (1.0 - x2 / 56 * (1.0 - x2 / 90 * (1.0 - x2 / 132)))));
  SinCosOfQuadrant(quadrant, s, c, sin_out, cos_out);
}

// Four standard normals for counter c: two Box-Muller pairs from one Philox block.
void Normals4(uint64_t seed, uint32_t stream, uint64_t c, double out[4]) {
  const auto r =
      Philox4x32({static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), stream, 0x6e6f726du},
                 {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  for (int p = 0; p < 2; ++p) {
    const double u1 = (static_cast<double>(r[2 * p]) + 1.0) * 0x1p-32;  // (0, 1]: log finite
    const double u2 = static_cast<double>(r[2 * p + 1]) * 0x1p-32;      // [0, 1)
    const double radius = std::sqrt(-2.0 * LnUnit(u1));
    double s, co;
    SinCos2Pi(u2, &s, &co);
    out[2 * p] = radius * co;
    out[2 * p + 1] = radius * s;
  }
}

// Elements [e0, e0 + n) of a tensor's N(mean, stddev^2) draws.
void DrawRange(uint64_t seed, uint32_t stream, int64_t e0, int64_t n, double mean, double stddev,
               float* out) {
  double z[4];
  int64_t cached = -1;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t e = e0 + i;
    if (e / 4 != cached) {
      cached = e / 4;
      Normals4(seed, stream, static_cast<uint64_t>(cached), z);
    }
    out[i] = static_cast<float>(mean + stddev * z[e % 4]);
  }
}

struct Builder {
  const RandomModelOptions& opts;
  gguf::GgufWriter* w;
  ThreadPool* pool;
  RandomModelSummary* summary;

  // A [rows, cols] matrix (rows of cols) in `type`, drawn N(0, kWeightStd^2);
  // with n_expert > 0 a stack of n_expert of them (GGUF dims {cols, rows, n_expert}).
  void Matrix(const std::string& name, DType type, int64_t rows, int64_t cols,
              int64_t n_expert = 0) {
    const std::vector<int64_t> dims = n_expert > 0 ? std::vector<int64_t>{cols, rows, n_expert}
                                                   : std::vector<int64_t>{cols, rows};
    if (n_expert > 0) rows *= n_expert;
    const int64_t row_bytes = RowBytes(type, cols);
    std::string bytes(static_cast<size_t>(rows * row_bytes), '\0');
    const uint32_t stream = StreamOf(name);
    auto fill = [&](int64_t r0, int64_t r1) {
      std::vector<float> row(cols);
      for (int64_t r = r0; r < r1; ++r) {
        DrawRange(opts.seed, stream, r * cols, cols, 0.0, kWeightStd, row.data());
        Status s = QuantizeRow(type, row.data(), cols, &bytes[r * row_bytes]);
        STET_CHECK_MSG(s.ok(), s.ToString().c_str());
      }
    };
    if (pool) {
      pool->ParallelFor(rows, 1, fill);
    } else {
      fill(0, rows);
    }
    summary->n_matrices += 1;
    summary->tensor_bytes += static_cast<int64_t>(bytes.size());
    w->AddTensor(name, type, dims, std::move(bytes));
  }

  // A weight matrix (or expert stack) of --type, or q8_0 where a K-quant cannot hold K.
  void Weight(const std::string& name, int64_t rows, int64_t cols, int64_t n_expert = 0) {
    DType type = opts.type;
    if (opts.more) {  // a mix: llama.cpp's rule and fallbacks (the output is the tied embedding)
      const QuantRecipe recipe{"", opts.type, *opts.more};
      type = RecipeType(recipe, TensorRole{name, cols, summary->n_layer, true}, DType::kQ8_0);
      if (type != opts.type && type != *opts.more) summary->n_fallback += 1;
    } else if (IsKQuant(type) && cols % kQKK != 0) {
      type = DType::kQ8_0;
      summary->n_fallback += 1;
    }
    Matrix(name, type, rows, cols, n_expert);
  }

  void Vector(const std::string& name, int64_t n, double mean, double stddev) {
    std::vector<float> v(n);
    DrawRange(opts.seed, StreamOf(name), 0, n, mean, stddev, v.data());
    VectorValues(name, v);
  }

  void VectorValues(const std::string& name, const std::vector<float>& v) {
    std::string bytes(v.size() * sizeof(float), '\0');
    std::copy(v.begin(), v.end(), reinterpret_cast<float*>(bytes.data()));
    summary->tensor_bytes += static_cast<int64_t>(bytes.size());
    w->AddTensor(name, DType::kF32, {static_cast<int64_t>(v.size())}, std::move(bytes));
  }
};

// Llama 3.1+ rope scaling as convert_hf_to_gguf.py writes it into rope_freqs.weight:
// factor 32, low_freq_factor 1, high_freq_factor 4, original context 8192.
std::vector<float> Llama3RopeFactors(int rot_dim, double base, double factor) {
  const double low = 1.0, high = 4.0, old_ctx = 8192.0;
  const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  std::vector<float> out;
  for (int i = 0; i < rot_dim; i += 2) {
    const double freq = 1.0 / PowD(base, static_cast<double>(i) / rot_dim);
    const double wavelen = 2.0 * kPi / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(static_cast<float>(factor));
    } else {
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      out.push_back(static_cast<float>(1.0 / ((1.0 - smooth) / factor + smooth)));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Vocabulary.

std::string Utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// GPT-2's bytes_to_unicode(), in its order: printable bytes map to themselves, the rest to
// U+0100 onwards. Returns (byte, token text) in vocabulary order.
std::vector<std::pair<int, std::string>> ByteTokens() {
  std::vector<std::pair<int, std::string>> out;
  std::array<bool, 256> printable{};
  for (int b = 0; b < 256; ++b) {
    printable[b] = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    if (printable[b]) out.emplace_back(b, Utf8(b));
  }
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    if (!printable[b]) out.emplace_back(b, Utf8(256 + n++));
  }
  return out;
}

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  int32_t bos = -1, eos = -1, unk = -1, pad = -1;
  bool add_bos = false;
  const char* pre = "smollm";
};

// Appends n_bpe tokens: the 256 byte tokens, then merges that grow words. Lefts are
// word tokens (optionally 'Ġ'-led, as the pre-tokenizers cut " word"), rights are
// letter-only tokens; every merge makes a token not held before, so each merged token
// has exactly one merge and every merge's parts are tokens.
void AppendBpeTokens(int n_bpe, Vocab* v) {
  STET_CHECK(n_bpe >= 256);
  std::unordered_set<std::string> have(v->tokens.begin(), v->tokens.end());
  std::string byte_text[256];
  for (const auto& [b, text] : ByteTokens()) {
    byte_text[b] = text;
    v->tokens.push_back(text);
    v->types.push_back(1);
    have.insert(text);
  }
  std::vector<std::string> lefts, rights;
  const std::string space = byte_text[' '];
  lefts.push_back(space);
  for (int c = 'a'; c <= 'z'; ++c) {
    lefts.push_back(byte_text[c]);
    rights.push_back(byte_text[c]);
    rights.push_back(byte_text[c]);  // lower case twice as likely as upper
  }
  for (int c = 'A'; c <= 'Z'; ++c) {
    lefts.push_back(byte_text[c]);
    rights.push_back(byte_text[c]);
  }
  auto add = [&](const std::string& l, const std::string& r) {
    std::string merged = l + r;
    if (merged.size() > 24 || !have.insert(merged).second) return false;
    v->merges.push_back(l + " " + r);
    v->tokens.push_back(merged);
    v->types.push_back(1);
    lefts.push_back(merged);
    if (merged.rfind(space, 0) != 0 && merged.size() <= 6) rights.push_back(merged);
    return true;
  };
  for (int c = 'a'; c <= 'z' && static_cast<int>(v->merges.size()) < n_bpe - 256; ++c) {
    add(space, byte_text[c]);
  }
  // A fixed generator: the vocabulary depends on the shape only, never on --seed.
  uint64_t counter = 0;
  auto next = [&counter]() {
    return Philox4x32({static_cast<uint32_t>(counter++), 0, 0, 0}, {0x766f6361u, 0x62000000u});
  };
  int64_t attempts = 0;
  while (static_cast<int>(v->merges.size()) < n_bpe - 256) {
    STET_CHECK_MSG(++attempts < 100LL * n_bpe, "merge generation does not converge");
    const auto r = next();
    add(lefts[r[0] % lefts.size()], rights[r[1] % rights.size()]);
  }
}

Vocab MakeVocab(const RandomModelShape& shape) {
  Vocab v;
  auto special = [&v](const std::string& text) {
    v.tokens.push_back(text);
    v.types.push_back(3);  // control
    return static_cast<int32_t>(v.tokens.size() - 1);
  };
  switch (shape.vocab) {
    case RandomVocabStyle::kSmolLm: {
      v.pre = "smollm";
      v.unk = special("<|endoftext|>");
      v.bos = special("<|im_start|>");
      v.eos = v.pad = special("<|im_end|>");
      AppendBpeTokens(shape.n_vocab - 3, &v);
      break;
    }
    case RandomVocabStyle::kQwen2: {
      v.pre = "qwen2";
      AppendBpeTokens(shape.n_vocab - 293, &v);  // Qwen2.5: 151643 BPE tokens
      v.bos = v.pad = special("<|endoftext|>");
      special("<|im_start|>");
      v.eos = special("<|im_end|>");
      while (static_cast<int>(v.tokens.size()) < shape.n_vocab) {
        v.tokens.push_back("[PAD" + std::to_string(v.tokens.size()) + "]");
        v.types.push_back(5);  // unused
      }
      break;
    }
    case RandomVocabStyle::kLlama3: {
      v.pre = "llama-bpe";
      v.add_bos = true;
      AppendBpeTokens(shape.n_vocab - 256, &v);
      const char* first[] = {"<|begin_of_text|>",
                             "<|end_of_text|>",
                             "<|reserved_special_token_0|>",
                             "<|reserved_special_token_1|>",
                             "<|finetune_right_pad_id|>",
                             "<|reserved_special_token_2|>",
                             "<|start_header_id|>",
                             "<|end_header_id|>",
                             "<|eom_id|>",
                             "<|eot_id|>",
                             "<|python_tag|>"};
      for (const char* t : first) special(t);
      v.bos = shape.n_vocab - 256;
      v.eos = v.bos + 1;
      for (int i = 3; static_cast<int>(v.tokens.size()) < shape.n_vocab; ++i) {
        special("<|reserved_special_token_" + std::to_string(i) + "|>");
      }
      break;
    }
  }
  STET_CHECK(static_cast<int>(v.tokens.size()) == shape.n_vocab);
  return v;
}

}  // namespace

const RandomModelShape* FindRandomModelShape(std::string_view name) {
  for (const RandomModelShape& s : kShapes) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::string RandomModelShapeList() {
  std::string out;
  for (const RandomModelShape& s : kShapes) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

std::string RandomModelTypeList() { return QuantRecipeList(); }

Result<DType> ParseRandomModelType(std::string_view name) {
  for (DType t : ComputableDTypes()) {
    if (name == DTypeName(t)) return t;
  }
  return InvalidArgument("unknown weight type '" + std::string(name) +
                         "' (expected one of: " + RandomModelTypeList() + ")");
}

Status SetRandomModelType(std::string_view name, RandomModelOptions* opts) {
  auto recipe = ParseQuantRecipe(std::string(name));
  if (!recipe.ok()) {
    return InvalidArgument("unknown weight type '" + std::string(name) +
                           "' (expected one of: " + RandomModelTypeList() + ")");
  }
  opts->type = recipe->base;
  opts->more.reset();
  if (recipe->more != recipe->base) opts->more = recipe->more;
  return Status::Ok();
}

Result<gguf::GgufWriter> BuildRandomModel(const RandomModelOptions& opts,
                                          RandomModelSummary* summary) {
  const RandomModelShape* shape = FindRandomModelShape(opts.shape);
  if (!shape) {
    return InvalidArgument("unknown shape '" + opts.shape +
                           "' (expected one of: " + RandomModelShapeList() + ")");
  }
  if (auto t = ParseRandomModelType(DTypeName(opts.type)); !t.ok()) return t.status();
  if (opts.n_layers < 0 || opts.n_layers > shape->n_layer) {
    return InvalidArgument("--layers must be in [1, " + std::to_string(shape->n_layer) + "] for " +
                           shape->name + " (0: all), not " + std::to_string(opts.n_layers));
  }
  RandomModelSummary local;
  if (!summary) summary = &local;
  *summary = RandomModelSummary{};
  const int n_layer = opts.n_layers > 0 ? opts.n_layers : shape->n_layer;
  summary->n_layer = n_layer;
  const int64_t d = shape->n_embd;
  const int64_t head_dim = shape->head_dim > 0 ? shape->head_dim : d / shape->n_head;
  const int64_t q_dim = shape->n_head * head_dim;
  const int64_t kv_dim = shape->n_head_kv * head_dim;
  const bool qkv_bias = std::string_view(shape->arch) == "qwen2";
  const bool moe = shape->n_expert > 0;

  // llama.cpp's rule for the output matrix (here the tied embedding): q6_k, but q8_0 when
  // the type is q8_0 or the row length is not a multiple of 256; float types stay.
  DType out_type = opts.type;
  if (!IsFloat(opts.type)) {
    out_type = (opts.type == DType::kQ8_0 || d % kQKK != 0) ? DType::kQ8_0 : DType::kQ6_K;
  }
  summary->output_type = out_type;

  gguf::GgufWriter w;
  std::unique_ptr<ThreadPool> pool;
  if (opts.n_threads > 1) pool = std::make_unique<ThreadPool>(opts.n_threads);
  Builder b{opts, &w, pool.get(), summary};

  // Metadata first (general.name is filled in once the fallback count is known).
  const std::string a = shape->arch;
  w.SetString("general.architecture", a);
  w.SetString("general.type", "model");
  w.SetString("general.name", "");
  // llama_ftype: the type's own, or the mix's (MOSTLY_Q4_K_M 15, MOSTLY_Q5_K_M 17).
  int ftype = GetDTypeTraits(static_cast<uint32_t>(opts.type))->llama_ftype;
  if (opts.more) ftype = opts.type == DType::kQ5_K ? 17 : 15;
  w.SetU32("general.file_type", static_cast<uint32_t>(ftype));
  if (!IsFloat(opts.type)) w.SetU32("general.quantization_version", 2);
  w.SetString("stet.random.shape", shape->name);
  w.SetU64("stet.random.seed", opts.seed);
  w.SetU32(a + ".block_count", static_cast<uint32_t>(n_layer));
  w.SetU32(a + ".context_length", static_cast<uint32_t>(shape->n_ctx_train));
  w.SetU32(a + ".embedding_length", static_cast<uint32_t>(d));
  w.SetU32(a + ".feed_forward_length", static_cast<uint32_t>(shape->n_ff));
  if (moe) {
    w.SetU32(a + ".expert_feed_forward_length", static_cast<uint32_t>(shape->n_ff));
    w.SetU32(a + ".expert_count", static_cast<uint32_t>(shape->n_expert));
    w.SetU32(a + ".expert_used_count", static_cast<uint32_t>(shape->n_expert_used));
  }
  w.SetU32(a + ".attention.head_count", static_cast<uint32_t>(shape->n_head));
  w.SetU32(a + ".attention.head_count_kv", static_cast<uint32_t>(shape->n_head_kv));
  w.SetF32(a + ".rope.freq_base", static_cast<float>(shape->rope_base));
  w.SetF32(a + ".attention.layer_norm_rms_epsilon", shape->rms_eps);
  w.SetU32(a + ".rope.dimension_count", static_cast<uint32_t>(head_dim));
  if (head_dim != d / shape->n_head) {
    w.SetU32(a + ".attention.key_length", static_cast<uint32_t>(head_dim));
    w.SetU32(a + ".attention.value_length", static_cast<uint32_t>(head_dim));
  }
  w.SetU32(a + ".vocab_size", static_cast<uint32_t>(shape->n_vocab));

  Vocab vocab = MakeVocab(*shape);
  w.SetString("tokenizer.ggml.model", "gpt2");
  w.SetString("tokenizer.ggml.pre", vocab.pre);
  w.SetStringArray("tokenizer.ggml.tokens", vocab.tokens);
  w.SetI32Array("tokenizer.ggml.token_type", vocab.types);
  w.SetStringArray("tokenizer.ggml.merges", vocab.merges);
  w.SetU32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(vocab.bos));
  w.SetU32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(vocab.eos));
  if (vocab.unk >= 0) w.SetU32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(vocab.unk));
  if (vocab.pad >= 0) w.SetU32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(vocab.pad));
  w.SetBool("tokenizer.ggml.add_bos_token", vocab.add_bos);
  w.SetBool("tokenizer.ggml.add_space_prefix", false);

  b.Matrix("token_embd.weight", out_type, shape->n_vocab, d);
  if (shape->llama3_rope) {
    b.VectorValues("rope_freqs.weight", Llama3RopeFactors(static_cast<int>(head_dim),
                                                          shape->rope_base, shape->rope_factor));
  }
  for (int l = 0; l < n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    b.Vector(p + "attn_norm.weight", d, 1.0, kWeightStd);
    b.Weight(p + "attn_q.weight", q_dim, d);
    b.Weight(p + "attn_k.weight", kv_dim, d);
    b.Weight(p + "attn_v.weight", kv_dim, d);
    if (qkv_bias) {
      b.Vector(p + "attn_q.bias", q_dim, 0.0, kWeightStd);
      b.Vector(p + "attn_k.bias", kv_dim, 0.0, kWeightStd);
      b.Vector(p + "attn_v.bias", kv_dim, 0.0, kWeightStd);
    }
    b.Weight(p + "attn_output.weight", d, q_dim);
    b.Vector(p + "ffn_norm.weight", d, 1.0, kWeightStd);
    if (moe) {  // qwen3moe: q/k norms, an f32 router and the expert stacks
      b.Vector(p + "attn_q_norm.weight", head_dim, 1.0, kWeightStd);
      b.Vector(p + "attn_k_norm.weight", head_dim, 1.0, kWeightStd);
      b.Matrix(p + "ffn_gate_inp.weight", DType::kF32, shape->n_expert, d);
      b.Weight(p + "ffn_gate_exps.weight", shape->n_ff, d, shape->n_expert);
      b.Weight(p + "ffn_up_exps.weight", shape->n_ff, d, shape->n_expert);
      b.Weight(p + "ffn_down_exps.weight", d, shape->n_ff, shape->n_expert);
      continue;
    }
    b.Weight(p + "ffn_gate.weight", shape->n_ff, d);
    b.Weight(p + "ffn_up.weight", shape->n_ff, d);
    b.Weight(p + "ffn_down.weight", d, shape->n_ff);
  }
  b.Vector("output_norm.weight", d, 1.0, kWeightStd);

  std::string name = std::string("stet-random ") + shape->real_name + " " + DTypeName(opts.type);
  if (opts.more) name += std::string("_m (") + DTypeName(*opts.more) + " mix)";
  if (n_layer != shape->n_layer) {
    name += " " + std::to_string(n_layer) + "/" + std::to_string(shape->n_layer) + " layers";
  }
  name += " seed " + std::to_string(opts.seed);
  if (summary->n_fallback > 0) {
    name += " (" + std::to_string(summary->n_fallback) + "/" +
            std::to_string(summary->n_matrices - 1) + " matrices q8_0: K%256!=0)";
  }
  name += std::string(" embd/output ") + DTypeName(out_type);
  w.SetString("general.name", name);
  summary->name = name;
  return w;
}

Status WriteRandomModel(const RandomModelOptions& opts, const std::string& path,
                        RandomModelSummary* summary) {
  STET_ASSIGN_OR_RETURN(gguf::GgufWriter w, BuildRandomModel(opts, summary));
  return w.WriteFile(path);
}

}  // namespace stet
