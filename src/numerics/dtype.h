// Tensor element types as GGUF stores them (ids equal ggml's), their block
// layouts, and per-type traits. Layouts are the on-disk formats; every struct
// is static_assert'ed to its exact byte size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"

namespace stet {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};

constexpr int kQK = 32;    // elements per block of the simple quant types
constexpr int kQKK = 256;  // elements per super-block of the K-quants
constexpr int kKScaleSize = 12;

using half_bits = uint16_t;  // IEEE binary16, stored as bits

// The 16 non-linear levels of iq4_nl and iq4_xs (ggml's kvalues_iq4nl), ascending: a
// weight is d * kIQ4NLValues[nibble]. The kernels use them as the integer weights.
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// Each block struct names its type (kType): the kernel files list their rows by block.
struct BlockQ4_0 {  // x = d * (q - 8); qs[i] low nibble = element i, high = i + 16
  static constexpr DType kType = DType::kQ4_0;
  half_bits d;
  uint8_t qs[kQK / 2];
};
struct BlockQ4_1 {  // x = d * q + m
  static constexpr DType kType = DType::kQ4_1;
  half_bits d;
  half_bits m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {  // x = d * (q - 16); q = nibble (as q4_0) | bit j of qh (element j) << 4
  static constexpr DType kType = DType::kQ5_0;
  half_bits d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {  // x = d * q + m; q as in q5_0
  static constexpr DType kType = DType::kQ5_1;
  half_bits d;
  half_bits m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockIQ4_NL {  // x = d * kIQ4NLValues[nibble]; nibbles as in q4_0
  static constexpr DType kType = DType::kIQ4_NL;
  half_bits d;
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {  // x = d * q
  static constexpr DType kType = DType::kQ8_0;
  half_bits d;
  int8_t qs[kQK];
};
struct BlockQ2_K {  // 16 sub-blocks of 16: x = (d * (sc & 15)) * q - dmin * (sc >> 4), q 2 bits
  static constexpr DType kType = DType::kQ2_K;
  uint8_t scales[kQKK / 16];
  uint8_t qs[kQKK / 4];
  half_bits d;
  half_bits dmin;
};
struct BlockQ3_K {  // 16 sub-blocks of 16: x = (d * (sc - 32)) * q, q 3 bits minus 4, sc 6 bits
  static constexpr DType kType = DType::kQ3_K;
  uint8_t hmask[kQKK / 8];
  uint8_t qs[kQKK / 4];
  uint8_t scales[12];
  half_bits d;
};
struct BlockIQ4_XS {  // 8 sub-blocks of 32: x = (d * (ls - 32)) * kIQ4NLValues[nibble]
  static constexpr DType kType = DType::kIQ4_XS;
  half_bits d;
  uint16_t scales_h;            // bits 2j..2j+1: the top 2 bits of sub-block j's 6-bit ls
  uint8_t scales_l[kQKK / 64];  // nibble j % 2 of byte j / 2: the low 4 bits of ls_j
  uint8_t qs[kQKK / 2];
};
struct BlockQ4_K {  // 8 sub-blocks of 32, 6-bit scales and mins packed in `scales`
  static constexpr DType kType = DType::kQ4_K;
  half_bits d;
  half_bits dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qs[kQKK / 2];
};
struct BlockQ5_K {
  static constexpr DType kType = DType::kQ5_K;
  half_bits d;
  half_bits dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {  // 16 sub-blocks of 16, int8 scales
  static constexpr DType kType = DType::kQ6_K;
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  half_bits d;
};
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

// What MatMul makes of the activation rows for weights of a type (kernels/internal.h):
// plain floats, 32-block int8 (ActQ8) or 256-superblock int8 (ActQ8K).
enum class ActFormat : uint8_t { kFloat, kQ8, kQ8K };

// One row of the type table (dtype.cc). The fields after llama_ftype are set for
// the computable types only: they are what tools, tests and kernels read, so a
// type is covered wherever they iterate the table (docs/recipes.md, "A weight type").
struct DTypeTraits {
  const char* name;     // "q4_k" — the name users see in errors
  int64_t block_elems;  // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
  int llama_ftype;      // llama.cpp's general.file_type for a file all of this type; -1: none
  ActFormat act = ActFormat::kFloat;
  // What llama.cpp's quantizer stores where a row's length is not a multiple of
  // block_elems (q4_k -> q5_0, ...); the type itself where every row fits.
  DType fallback = DType::kF32;
  // The scalar definitions (numerics/codecs.h): nb blocks (plain types: elements).
  void (*dequantize)(const void* blocks, int64_t nb, float* out) = nullptr;
  Status (*quantize)(const float* x, int64_t nb, void* blocks) = nullptr;
  // Byte offsets in a block of its f16 scale fields (d, then m or dmin); -1: none.
  int16_t f16_fields[2] = {-1, -1};
};

// Traits of a known type id, or nullopt for an id stet does not know at all.
std::optional<DTypeTraits> GetDTypeTraits(uint32_t type_id);
const char* DTypeName(DType t);
// True for the types stet can compute with (dequantize and matmul).
bool DTypeSupported(DType t);
// The types stet computes with, in the order of SupportedDTypeList(): what
// tools and tests iterate, so that a new type is covered where they do.
const std::vector<DType>& ComputableDTypes();
// The computable block types (those with a reference quantizer): q8_0 ... iq4_xs.
const std::vector<DType>& QuantizedDTypes();
// "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs"
const char* SupportedDTypeList();
// Bytes used by one row of n elements (n must be a multiple of block_elems).
int64_t RowBytes(DType t, int64_t n);

}  // namespace stet
