// Shared between the dispatch (kernels.cc, matmul.cc), kernels/ref (the scalar
// oracle), kernels/x86 (AVX2, AVX-512) and kernels/neon: the quantized-activation
// layouts, the canonical 8-lane combine, and each path's entry points (MatMul's as
// rows of the kernel table, matmul_table.h). Tests include it to pin the activation
// quantization (rule R6) and the per-type canonical orders.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "base/check.h"
#include "kernels/kernels.h"
#include "kernels/matmul_table.h"
#include "numerics/half.h"
#include "numerics/math.h"

namespace stet::kernels {

constexpr int kLanes = 8;  // the logical accumulator width on every path (rule R4)

// Two int16 values as one int32, lo in the low half: the operand of a pairwise
// int16 multiply-add (vpdpwssd, pmaddwd) against int16 pairs (lo_t, hi_t).
inline int32_t Int16Pair(int32_t lo, int32_t hi) {
  return static_cast<int32_t>((static_cast<uint32_t>(lo) & 0xffffu) |
                              (static_cast<uint32_t>(hi) << 16));
}

// True for the build's SIMD path: Isa::kAvx2 and kAvx512 (which uses the AVX2
// path for the kernels it has no AVX-512 version of) on x86-64, kNeon on
// aarch64; aborts if this CPU or build cannot run it (a caller asking for a path
// it never checked is a programmer error). kernels.cc.
bool UseSimd(Isa isa);

// The fixed lane tree: s4[i] = l[i] + l[i+4]; s2[i] = s4[i] + s4[i+2]; s2[0] + s2[1].
static inline float CombineLanes(const float* l) {
  const float s0 = l[0] + l[4], s1 = l[1] + l[5], s2 = l[2] + l[6], s3 = l[3] + l[7];
  const float t0 = s0 + s2, t1 = s1 + s3;
  return t0 + t1;
}

// Attention-logit soft-capping (Gemma 2): s_t = cap * TanhF(s_t / cap), applied
// to the scores before the softmax by every path's attention kernel through this
// one scalar function (same bits everywhere). cap <= 0: scores unchanged.
static inline void SoftCap(float* s, int64_t n, float cap) {
  if (!(cap > 0.0f)) return;
  for (int64_t t = 0; t < n; ++t) s[t] = cap * TanhF(s[t] / cap);
}

// The KV cache stores f32 or f16: the SIMD attention kernels' two instances,
// f(std::integral_constant<DType, T>{}) for T = kv_type.
template <typename F>
static inline void WithKvType(DType kv_type, const char* msg, F&& f) {
  if (kv_type == DType::kF32) {
    f(std::integral_constant<DType, DType::kF32>{});
  } else if (kv_type == DType::kF16) {
    f(std::integral_constant<DType, DType::kF16>{});
  } else {
    STET_CHECK_MSG(false, msg);
  }
}

// A run-time count as a template argument (how many vectors a kernel keeps in
// registers): calls f(std::integral_constant<int, N>{}) with N = n for n in
// 1..kMax - 1 and N = kMax for n >= kMax; nothing for n <= 0.
template <int kMax, int N = 1, typename F>
static inline void WithCount(int n, F&& f) {
  if constexpr (N < kMax) {
    if (n == N) {
      f(std::integral_constant<int, N>{});
    } else {
      WithCount<kMax, N + 1>(n, f);
    }
  } else {
    if (n >= kMax) f(std::integral_constant<int, kMax>{});
  }
}

// StoreRow on every path: f32 is a copy; f16 converts a prefix with the path's
// vectors (vec_f16(x, n, bytes) returns how many it did) and the rest with
// F32ToF16, the same round-to-nearest-even.
template <typename VecF16>
static inline void StoreRowWith(const float* x, int64_t n, DType dst_type, void* dst,
                                VecF16&& vec_f16) {
  switch (dst_type) {
    case DType::kF32:
      if (n > 0) std::memmove(dst, x, static_cast<size_t>(n) * 4);
      break;
    case DType::kF16: {
      auto* h = static_cast<uint8_t*>(dst);
      for (int64_t i = vec_f16(x, n, h); i < n; ++i) {
        const uint16_t v = F32ToF16(x[i]);
        std::memcpy(h + 2 * i, &v, 2);
      }
      break;
    }
    default:
      STET_CHECK_MSG(false, "StoreRow: the KV cache stores f32 or f16");
  }
}

// Element j of a row stored as f32, f16 or bf16 (unaligned bytes), widened exactly: the
// scalar loads of every float MatMul and attention path (the reference's, the SIMD
// paths' tails).
template <DType T>
static inline float LoadElement(const uint8_t* row, int64_t j) {
  static_assert(T == DType::kF32 || T == DType::kF16 || T == DType::kBF16);
  if constexpr (T == DType::kF32) {
    float v;
    std::memcpy(&v, row + 4 * j, 4);
    return v;
  } else {
    uint16_t h;
    std::memcpy(&h, row + 2 * j, 2);
    return T == DType::kF16 ? F16ToF32(h) : BF16ToF32(h);
  }
}

// Rope's pairs [from, half) of one head in scalar IEEE ops: the reference itself and
// every SIMD path's tail. x0' = x0*c - x1*s, x1' = x0*s + x1*c (separate multiplies, no
// fma); pair i is elements (2i, 2i+1) under kNormal, (i, i + half) under kNeox.
static inline void RopePairs(float* xh, int from, int half, RopeStyle style, const float* cos,
                             const float* sin) {
  for (int i = from; i < half; ++i) {
    const int i0 = style == RopeStyle::kNormal ? 2 * i : i;
    const int i1 = style == RopeStyle::kNormal ? 2 * i + 1 : i + half;
    const float x0 = xh[i0], x1 = xh[i1];
    const float c = cos[i], s = sin[i];
    xh[i0] = x0 * c - x1 * s;
    xh[i1] = x0 * s + x1 * c;
  }
}

// SumExpShifted's exact shortcut, shared by its SIMD paths: for a positive
// normal s in [2^E, 2^(E+1)), s + e == s for every 0 <= e < 2^(E-24) (half the
// spacing of floats above s: the exact sum lies less than half a spacing above
// s, so it rounds to s). Returns that bound, or 0 (skip nothing) for any other s
// and where the bound would be subnormal. The sum only grows (every e >= 0), so
// an e below the bound of an earlier s cannot change the sum either: the SIMD
// paths leave out those adds and still give the serial sum's bits.
static inline float SumSkipBelow(float s) {
  uint32_t b;
  std::memcpy(&b, &s, 4);
  const uint32_t e = b >> 23;  // the biased exponent; >= 256 for a negative s
  if (e < 25 || e > 254) return 0.0f;
  const uint32_t t = (e - 24) << 23;
  float out;
  std::memcpy(&out, &t, 4);
  return out;
}

// A cheaper test before the exps: for below = SumSkipBelow(s) = 2^k, any
// argument y < SumSkipArgBelow(below) = k ln2 - 1 (rounded to float) has
// ExpF(y) < 2^k / e (1 + ExpF's ~1 ulp error), so below `below`: such an e
// would be skipped anyway, and its exp need not be computed. -inf (nothing
// passes) when below is 0. NaN arguments never compare below.
static inline float SumSkipArgBelow(float below) {
  if (!(below > 0.0f)) return -INFINITY;
  uint32_t b;
  std::memcpy(&b, &below, 4);
  const int k = static_cast<int>(b >> 23) - 127;  // below is a normal power of two
  return static_cast<float>(k * 0.6931471805599453 - 1.0);
}

// Activation rows quantized per 32-block for q8_0/q4_0/q4_1 weights. For block
// b of row r: d = amax/127, id = d != 0 ? 1/d : 0, q = nearbyint(x * id) (ties
// to even), qsum = sum q, s = d * float(qsum). Each row is padded with zero
// blocks to a multiple of 8 blocks so the SIMD path can always work on 8.
struct ActQ8 {
  int64_t m = 0, k = 0;
  int64_t nb = 0;           // blocks per row (k / 32)
  int64_t nb_pad = 0;       // nb rounded up to a multiple of 8: the row stride in blocks
  int8_t* qs = nullptr;     // [m][nb_pad * 32]
  float* d = nullptr;       // [m][nb_pad]
  float* s = nullptr;       // [m][nb_pad]
  int32_t* qsum = nullptr;  // [m][nb_pad]
};

// Fills an ActQ8 from m x k floats, every path alike but for one block:
// block(xb, qb, &qsum) quantizes the 32 floats at xb into qb and returns d
// (qsum: the exact sum of the 32 q's); s = d * float(qsum). The padding
// blocks past nb are all zero.
template <typename BlockFn>
static inline void FillActQ8(const float* x, ActQ8* a, BlockFn&& block) {
  for (int64_t r = 0; r < a->m; ++r) {
    const float* xr = x + r * a->k;
    int8_t* qs = a->qs + r * a->nb_pad * kQK;
    float* d = a->d + r * a->nb_pad;
    float* s = a->s + r * a->nb_pad;
    int32_t* qsum = a->qsum + r * a->nb_pad;
    for (int64_t b = 0; b < a->nb; ++b) {
      d[b] = block(xr + b * kQK, qs + b * kQK, &qsum[b]);
      s[b] = d[b] * static_cast<float>(qsum[b]);
    }
    for (int64_t b = a->nb; b < a->nb_pad; ++b) {
      std::memset(qs + b * kQK, 0, kQK);
      d[b] = 0.0f;
      s[b] = 0.0f;
      qsum[b] = 0;
    }
  }
}

// Activation rows quantized per 256-superblock for the K-quants: one d per
// superblock (same formula as ActQ8) and the exact int sums of each 16 q's.
struct ActQ8K {
  int64_t m = 0, k = 0;
  int64_t nsb = 0;           // superblocks per row (k / 256)
  int8_t* qs = nullptr;      // [m][k]
  float* d = nullptr;        // [m][nsb]
  int16_t* bsums = nullptr;  // [m][nsb * 16]
  // [m][nsb * 4]: the sums of sub-blocks 2q and 2q + 1 (32 q's each) as an int16
  // pair (even low), for the rows that ask (kActSubSums); else null.
  int32_t* sx2 = nullptr;
};

// Fills an ActQ8K from m x k floats, every path alike but for one superblock:
// block(xb, qb, bsums) quantizes the 256 floats at xb into qb, writes the exact sums of
// each 16 q's into bsums[0..15] and returns d.
template <typename BlockFn>
static inline void FillActQ8K(const float* x, ActQ8K* a, BlockFn&& block) {
  for (int64_t r = 0; r < a->m; ++r) {
    for (int64_t b = 0; b < a->nsb; ++b) {
      const int64_t sb = r * a->nsb + b;
      a->d[sb] = block(x + r * a->k + b * kQKK, a->qs + r * a->k + b * kQKK, a->bsums + sb * 16);
    }
  }
}

// AVX-512 layouts (kernels/x86/*_avx512.cc), built from the above once per
// MatMul. They only move data; the numbers and their order stay the canonical ones.
//
// ActPairs: float activation rows interleaved in pairs, 8 elements at a time,
// so one 16-lane vector holds two rows' 8-lane chunks: x2[(p * chunks + c) * 16
// + h * 8 + e] = x[2p + h][8c + e], zero past k and past m.
struct ActPairs {
  int64_t m = 0, k = 0;
  int64_t chunks = 0;  // ceil(k / 8)
  int64_t pairs = 0;   // ceil(m / 2)
  float* x2 = nullptr;
};

// ActQ8V: 32-block quantized activations (ActQ8's q's and d's) "vertical" for
// VNNI: 16 rows per group, 4 consecutive q's of a row per 32-bit lane:
// qs[((g * nb + b) * 8 + j) * 64 + t * 4 + e] = q[16g + t][32b + 4j + e], plus
// 128 when `biased` (q8_0 and iq4_nl weights are signed, so the activations must be
// the unsigned operand; the kernel subtracts 128 * sum w exactly), raw otherwise
// (q4/q5 weights are the unsigned operand). d[(g * nb + b) * 16 + t] = d[16g + t][b];
// likewise qsum (q4_0, q5_0) and s (q4_1, q5_1) when not null. Rows past m hold q = 0, d = 0.
struct ActQ8V {
  int64_t m = 0, nb = 0, groups = 0;
  bool biased = true;
  uint8_t* qs = nullptr;
  float* d = nullptr;
  int32_t* qsum = nullptr;
  float* s = nullptr;
};

// ActQ8KV: ActQ8K's rows vertical the same way: per group of 16 rows and
// superblock b, 64 steps of 4 q's:
// qs[((g * nsb + b) * 64 + s) * 64 + t * 4 + e] = q[16g + t][256b + 4s + e],
// signed as quantized for q4_k (its nibbles are the unsigned operand), plus 128
// when `biased` (the other K-quants' unpacked weights are signed);
// d[(g * nsb + b) * 16 + t]; for q4_k the sums of each 32-q sub-block j as int16
// pairs (j even, j odd) per row: sx[((g * nsb + b) * 4 + j / 2) * 32 + 2t + j % 2];
// for q2_k/q5_k (mins) the sums of each 16 q's (ActQ8K's bsums) the same way:
// sx16[((g * nsb + b) * 8 + j / 2) * 32 + 2t + j % 2].
struct ActQ8KV {
  int64_t m = 0, nsb = 0, groups = 0;
  bool biased = false;
  int8_t* qs = nullptr;
  float* d = nullptr;
  int16_t* sx = nullptr;
  int16_t* sx16 = nullptr;
};

// Bytes per (16-row group, 32-block) of the packed layout (kernels.h).
int64_t PackedBlockBytes(DType t);

// Lays out `act` for m rows of k in `storage` (grown as needed, never shrunk);
// the vertical layouts carry what `flags` (ActFlag) ask for.
void PrepareActQ8(int64_t m, int64_t k, std::vector<uint8_t>* storage, ActQ8* act);
void PrepareActQ8K(int64_t m, int64_t k, std::vector<uint8_t>* storage, ActQ8K* act);
void PrepareActPairs(int64_t m, int64_t k, std::vector<uint8_t>* storage, ActPairs* act);
void PrepareActQ8V(int64_t m, int64_t nb, uint8_t flags, std::vector<uint8_t>* storage,
                   ActQ8V* act);
void PrepareActQ8KV(int64_t m, int64_t nsb, uint8_t flags, std::vector<uint8_t>* storage,
                    ActQ8KV* act);

// y[i * ldy + r] for activation rows i < m and weight rows r in [r0, r1).
struct MatMulArgs {
  const WeightView* w;
  const float* x;     // [m][w.cols], for f32/f16/bf16 weights
  const ActQ8* a8;    // for q8_0/q4_0/q4_1
  const ActQ8K* a8k;  // for the K-quants
  int64_t m;
  float* y;
  const ActPairs* xp = nullptr;   // AVX-512 float path
  const ActQ8V* a8v = nullptr;    // AVX-512 VNNI 32-block path
  const ActQ8KV* a8kv = nullptr;  // AVX-512 VNNI q4_k path
  // A refined call's rows (2i: x's, 2i + 1: its residual's), summed in the
  // kernel: y[i * rows + r] = output of row 2i + output of row 2i + 1, for the
  // kernels whose FusesRowPairs(row) holds (the AVX-512 vertical ones).
  bool sum_row_pairs = false;
};

// The integer-dot row kernels' walk (ref, NEON): y[i * rows + r] = K::Row(weight row r
// as blocks, a, i) for activation rows i < m and weight rows r in [r0, r1). K is a
// class, not a lambda, so that a caller's target attribute (NEON's dotprod) reaches
// the row it inlines.
template <typename K, typename Block>
__attribute__((always_inline)) static inline void RowWalk(const MatMulArgs& a, int64_t r0,
                                                          int64_t r1) {
  const WeightView& w = *a.w;
  for (int64_t i = 0; i < a.m; ++i) {
    for (int64_t r = r0; r < r1; ++r) {
      const auto* blocks =
          reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w.data) + r * w.row_bytes);
      a.y[i * w.rows + r] = K::Row(blocks, a, i);
    }
  }
}

// The weight types with an offset: q4_1 / q5_1 (x = d q + m) and the superblock
// types with mins (q2_k, q4_k, q5_k: x = d sc q - dmin m).
template <typename Block>
constexpr bool kBlockHasMin = std::is_same_v<Block, BlockQ4_1> || std::is_same_v<Block, BlockQ5_1>;
template <typename Block>
constexpr bool kSuperHasMins = std::is_same_v<Block, BlockQ2_K> ||
                               std::is_same_v<Block, BlockQ4_K> || std::is_same_v<Block, BlockQ5_K>;

// A 32-block's terms in its logical lane, in the order every path keeps:
// lane = fma(dw * dx, float(isum), lane), then for q4_1 / q5_1 fma(mw, sx, lane).
template <typename Block>
static inline float AddBlockTerms(float lane, const Block& b, float dx, float sx, int32_t isum) {
  lane = std::fma(F16ToF32(b.d) * dx, static_cast<float>(isum), lane);
  if constexpr (kBlockHasMin<Block>) lane = std::fma(F16ToF32(b.m), sx, lane);
  return lane;
}

// A superblock's: lane = fma(d * dx, float(isum), lane), then for the types with
// mins lane = fma(-(dmin * dx), float(msum), lane).
template <typename Block>
static inline float AddSuperTerms(float lane, const Block& b, float dx, int32_t isum,
                                  int32_t msum) {
  lane = std::fma(F16ToF32(b.d) * dx, static_cast<float>(isum), lane);
  if constexpr (kSuperHasMins<Block>) {
    lane = std::fma(-(F16ToF32(b.dmin) * dx), static_cast<float>(msum), lane);
  }
  return lane;
}

// The 256-element superblock types (ActQ8K activations); the rest are 32-blocks (ActQ8).
template <typename Block>
constexpr bool kSuperBlock = std::is_same_v<Block, BlockQ2_K> || std::is_same_v<Block, BlockQ3_K> ||
                             std::is_same_v<Block, BlockQ4_K> || std::is_same_v<Block, BlockQ5_K> ||
                             std::is_same_v<Block, BlockQ6_K> || std::is_same_v<Block, BlockIQ4_XS>;

// RowWalk's rows for the integer-dot types (ref, NEON): one output, each block's
// terms in lane b % 8 in increasing b, then the lane tree.
// 32-blocks: Dot::Lead(blocks, q's, d's, s's, nb, lanes) sets all 8 lanes from
// the blocks a SIMD path takes 8 at a time and returns how many it took (the
// reference: none, lanes stay 0); each later block's exact dot Dot::Of(block, its
// q's) goes in by AddBlockTerms. Superblocks: Dot::Of(block, its q's, their
// 16-element sums, &isum, &msum), by AddSuperTerms.
template <typename Dot>
struct DotRows {
  template <typename Block>
  __attribute__((always_inline)) static inline float Row(const Block* blocks, const MatMulArgs& a,
                                                         int64_t i) {
    float lanes[kLanes] = {};
    if constexpr (kSuperBlock<Block>) {
      const ActQ8K& act = *a.a8k;
      for (int64_t b = 0; b < act.nsb; ++b) {
        const int64_t sb = i * act.nsb + b;
        int32_t isum, msum = 0;
        Dot::Of(blocks[b], act.qs + i * act.k + b * kQKK, act.bsums + sb * 16, &isum, &msum);
        lanes[b % kLanes] = AddSuperTerms(lanes[b % kLanes], blocks[b], act.d[sb], isum, msum);
      }
    } else {
      const ActQ8& act = *a.a8;
      const int8_t* qx = act.qs + i * act.nb_pad * kQK;
      const float* dx = act.d + i * act.nb_pad;
      const float* sx = act.s + i * act.nb_pad;
      for (int64_t b = Dot::Lead(blocks, qx, dx, sx, act.nb, lanes); b < act.nb; ++b) {
        const int32_t isum = Dot::Of(blocks[b], qx + b * kQK);
        lanes[b % kLanes] = AddBlockTerms(lanes[b % kLanes], blocks[b], dx[b], sx[b], isum);
      }
    }
    return CombineLanes(lanes);
  }
};

// The kernel table's rows of family f over Blocks, each RowWalk<K, Block>.
template <typename K, typename... Blocks>
constexpr auto RowWalkKernels(const KernelFamily& f) {
  return KernelRowsOf<Blocks...>(f, [](auto tag) {
    using B = typename decltype(tag)::type;
    return TypeRows{B::kType, RowWalk<K, B>};
  });
}

// The entry points every path has (ref: the scalar oracle; avx2; neon), declared
// once for each: the activation quantizers, the MatMul kernel rows of its files
// (matmul_table.h) and the element-wise and attention ops of kernels.h.
#define STET_DECLARE_PATH_OPS()                                                                   \
  void QuantizeActQ8(const float* x, ActQ8* act); /* all act->m rows */                           \
  void QuantizeActQ8K(const float* x, ActQ8K* act);                                               \
  std::span<const MatMulKernel> MatMulFloatKernels(); /* f32, f16, bf16 */                        \
  std::span<const MatMulKernel> MatMulQ8Kernels();    /* the 32-block types */                    \
  std::span<const MatMulKernel> MatMulQKKernels();    /* the superblock types (x86: not all) */   \
  float Dot(const float* a, const float* b, int64_t n);                                           \
  void RmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* y);        \
  void SwiGlu(const float* gate, const float* up, int64_t n, float* out);                         \
  void GeGlu(const float* gate, const float* up, int64_t n, float* out);                          \
  void Add(const float* a, const float* b, int64_t n, float* out);                                \
  void Rope(float* x, int n_heads, int head_dim, int rot_dim, const float* cos, const float* sin, \
            RopeStyle style);                                                                     \
  void StoreRow(const float* x, int64_t n, DType dst_type, void* dst);                            \
  void AttendHead(const float* q, const KvRows& k, const KvRows& v, DType kv_type, int64_t n_kv,  \
                  int head_dim, float scale, float softcap, float* out, float* scratch);          \
  float SumExpShifted(const float* x, int64_t n, float shift);                                    \
  int64_t Argmax(const float* x, int64_t n);

namespace ref {
STET_DECLARE_PATH_OPS()
// r = x - the activation QuantizeActQ8 (block 32) / QuantizeActQ8K (block 256) hands the kernels.
void ActResidual(const float* x, int64_t m, int64_t k, int block, float* r);
// AttendHead's steps (kernels.h); ref::AttendHead is the three in a row.
void AttendScores(const float* const* qs, int nq, const KvRows& k, DType kv_type, int64_t t0,
                  int64_t t1, int head_dim, float scale, float* const* s);
float AttendSoftmax(float* s, int64_t n, float softcap);
void AttendValues(const float* const* e, const float* den, int nq, const KvRows& v, DType kv_type,
                  int64_t n, int j0, int j1, float* const* out);
}  // namespace ref

namespace avx2 {
STET_DECLARE_PATH_OPS()
std::span<const MatMulKernel> MatMulQKLowBitKernels();  // q2_k, q3_k, iq4_xs
// The packed 16-row layout (pack.cc) on ActQ8 / ActQ8K rows; r0 a multiple of 16.
std::span<const MatMulKernel> MatMulPackedKernels();
std::span<const MatMulKernel> MatMulPackedQKKernels();
// Two AttendHead calls over the same K/V in one pass (head_dim % 8 == 0);
// scratch: 2 * max(n_kv) floats.
void AttendHeadPair(const float* q0, const float* q1, const KvRows& k, const KvRows& v,
                    DType kv_type, int64_t n_kv0, int64_t n_kv1, int head_dim, float scale,
                    float softcap, float* out0, float* out1, float* scratch);
// nq AttendHead calls over the same K/V in one blocked pass (head_dim % 8 == 0);
// scratch: AttendHeadsScratch floats.
void AttendHeads(const float* const* qs, const int64_t* n_kv, int nq, const KvRows& k,
                 const KvRows& v, DType kv_type, int head_dim, float scale, float softcap,
                 float* const* outs, float* scratch);
// s[t] = ExpF(s[t] - max s) in place; returns the 8-lane sum of the results
// (lane t % 8, fixed tree): AttendHead's softmax step.
float Softmax(float* s, int64_t n);
// AttendScores / AttendValues (kernels.h); head_dim % 8 == 0.
void AttendScores(const float* const* qs, int nq, const KvRows& k, DType kv_type, int64_t t0,
                  int64_t t1, int head_dim, float scale, float* const* s);
void AttendValues(const float* const* e, const float* den, int nq, const KvRows& v, DType kv_type,
                  int64_t n, int j0, int j1, int head_dim, float* const* out);
}  // namespace avx2

// AVX-512 (F/BW/DQ/VL/VNNI): MatMul rows (packed small batches, paired and
// vertical layouts for batches) and paired attention; every other kernel uses
// the AVX2 path. Same bits as ref (rule R4).
namespace avx512 {
// Fill row pairs [p0, p1) / row groups [g0, g1) (threads split them).
void PairActivations(const float* x, ActPairs* xp, int64_t p0, int64_t p1);
void VerticalizeQ8(const ActQ8& a8, ActQ8V* v, int64_t g0, int64_t g1);  // a8 quantized already
void VerticalizeQ8K(const ActQ8K& a8k, ActQ8KV* v, int64_t g0, int64_t g1);
std::span<const MatMulKernel> MatMulFloatKernels();       // on ActPairs
std::span<const MatMulKernel> MatMulQ8Kernels();          // on ActQ8V
std::span<const MatMulKernel> MatMulQKKernels();          // q4_k on ActQ8KV
std::span<const MatMulKernel> MatMulQKUnpackedKernels();  // the other superblock types
std::span<const MatMulKernel> MatMulPackedKernels();      // q8_0/q4_0/q4_1/q4_k, packed
// Two AttendHead calls over the same K/V (n_kv0, n_kv1 positions), one pass;
// head_dim % 8 == 0. scratch: 2 * max(n_kv) + 2 * head_dim floats.
void AttendHeadPair(const float* q0, const float* q1, const KvRows& k, const KvRows& v,
                    DType kv_type, int64_t n_kv0, int64_t n_kv1, int head_dim, float scale,
                    float softcap, float* out0, float* out1, float* scratch);
// Four AttendHead calls over the same K/V (q[i], n_kv[i], out[i]), one pass, each
// K/V load and widening serving all four; head_dim % 8 == 0. scratch: 4 * max(n_kv)
// + 4 * head_dim floats.
void AttendHeadQuad(const float* const* q, const KvRows& k, const KvRows& v, DType kv_type,
                    const int64_t* n_kv, int head_dim, float scale, float softcap,
                    float* const* out, float* scratch);
// AttendScores / AttendValues (kernels.h); head_dim % 8 == 0, j0 % 16 == 0 and j1
// % 16 == 0 or j1 == head_dim.
void AttendScores(const float* const* qs, int nq, const KvRows& k, DType kv_type, int64_t t0,
                  int64_t t1, int head_dim, float scale, float* const* s);
void AttendValues(const float* const* e, const float* den, int nq, const KvRows& v, DType kv_type,
                  int64_t n, int j0, int j1, int head_dim, float* const* out);
}  // namespace avx512

// NEON (aarch64; kernels/neon/): Isa::kNeon. Its MatMul rows use SDOT where the
// CPU has dotprod (MatMulKernel::cpu_ok), SMULL + SADALP otherwise.
namespace neon {
STET_DECLARE_PATH_OPS()
}  // namespace neon

#undef STET_DECLARE_PATH_OPS

// The build's SIMD path's `fn` when `simd` (UseSimd), else the scalar one: a build
// has one SIMD family, AVX2 (x86-64) or NEON (aarch64). Only in kernels/*.cc,
// whose build defines STET_KERNELS_HAVE_*.
#if defined(STET_KERNELS_HAVE_AVX2)
#define STET_PATH(simd, fn) ((simd) ? avx2::fn : ref::fn)
#elif defined(STET_KERNELS_HAVE_NEON)
#define STET_PATH(simd, fn) ((simd) ? neon::fn : ref::fn)
#else
#define STET_PATH(simd, fn) ref::fn
#endif

}  // namespace stet::kernels
