// AVX2 helpers shared by kernels/x86/*_avx2.cc: the canonical lane tree on a
// __m256, exact integer horizontal sums, tail masks. Only include from files
// compiled with -mavx2 -mfma -mf16c (or the AVX-512 flags). Bitwise twins of
// kernels/internal.h. Static, so an out-of-line copy built with AVX-512 flags
// can never be linked into the AVX2 path.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

// Fully unrolls a loop over a small compile-time count (tile rows, lanes), so
// arrays of vectors indexed by it live in registers. GCC at -O2 would keep them
// in memory otherwise.
#define STET_UNROLL _Pragma("GCC unroll 16")

namespace stet::kernels::avx2 {

// a[g][n] = v for every g < TG, n < RN (a tile's accumulators; any vector type).
template <typename V, int TG, int RN>
static inline void FillTile(V (&a)[TG][RN], V v) {
  STET_UNROLL
  for (int g = 0; g < TG; ++g) STET_UNROLL
  for (int n = 0; n < RN; ++n) a[g][n] = v;
}

// The float vector the shared SIMD templates (sum_exp_simd.h, argmax_simd.h, glu_simd.h)
// run on: 8 lanes, the element-wise steps every one of them needs. Store is aligned (the
// templates' scratch); StoreU is not.
namespace {  // internal linkage, as the static helpers below: no copy built for another ISA
struct F32x8 {
  using Vec = __m256;
  static constexpr int kWidth = 8;
  static Vec Splat(float v) { return _mm256_set1_ps(v); }
  static Vec Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, Vec v) { _mm256_store_ps(p, v); }
  static void StoreU(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static Vec Sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
  static Vec Mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
};
}  // namespace

// The fixed lane tree of internal.h's CombineLanes, on a vector:
// s4[i] = l[i] + l[i+4]; s2[i] = s4[i] + s4[i+2]; s2[0] + s2[1].
static inline float CombineLanes8(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// Exact sum of 8 int32 (no overflow in any caller; integer addition is associative).
static inline int32_t HsumEpi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// All-ones in the first n (0..8) 32-bit lanes.
static inline __m256i TailMask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// An empty asm that "changes" v: the accumulation chain through v stays in the
// written order, one step after another. Without it GCC computes every maddubs
// of a block first and spills them all (the sums are exact, so the order is free).
static inline void KeepInRegister(__m256i& v) { asm("" : "+x"(v)); }

// Four bytes at p as one int32 (unaligned).
static inline int32_t Load32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 4-byte word at p in every 32-bit lane: one activation word against 8 rows.
static inline __m256i Bcast32(const int8_t* p) { return _mm256_set1_epi32(Load32(p)); }

// A 4-bit block's 16 bytes at qs as its 32 nibbles, one a byte, in element order
// (low nibbles are elements 0..15, high nibbles 16..31).
static inline __m256i Nibbles32(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// q5_0/q5_1's fifth bits: bit e of the little-endian 32-bit word at qh as 16 (or
// 0) in byte e, to be or'd onto Nibbles32 of the block's quants.
static inline __m256i FifthBits32(const uint8_t* qh) {
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(Load32(qh)),
                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(16));
}

// CombineLanes lane-wise over 8 outputs: l[i] holds logical lane i of each.
static inline __m256 CombineLanes8x8(const __m256* l) {
  const __m256 s0 = _mm256_add_ps(l[0], l[4]), s1 = _mm256_add_ps(l[1], l[5]);
  const __m256 s2 = _mm256_add_ps(l[2], l[6]), s3 = _mm256_add_ps(l[3], l[7]);
  return _mm256_add_ps(_mm256_add_ps(s0, s2), _mm256_add_ps(s1, s3));
}

// The 8 outputs of a packed half group, or the first n of them at the matrix's end.
static inline void StoreHalf(__m256 r, float* y, int64_t n) {
  if (n >= 8) {
    _mm256_storeu_ps(y, r);
  } else {
    _mm256_maskstore_ps(y, TailMask(n), r);
  }
}

// -(a * b), as C++'s unary minus of the rounded product (sign flip, nan too).
static inline __m256 NegMul(__m256 a, __m256 b) {
  return _mm256_xor_ps(_mm256_mul_ps(a, b),
                       _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int32_t>(0x80000000u))));
}

// 8 row bytes at p, each twice, as 16 int16 [b0 b0 b1 b1 ... b7 b7] (zero- or
// sign-extended): a per-row factor for madd on maddubs' two int16 partials per row.
static inline __m256i RowPairsU8(const uint8_t* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(b, b));
}
static inline __m256i RowPairsI8(const uint8_t* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(b, b));
}

// Software prefetch of [p, p + bytes), line by line (never faults, even past
// the end of a mapping): decode streams the packed weights from DRAM, and the
// hardware prefetcher alone leaves one core at about half its bandwidth.
// PrefetchLines asks for L2 (T1): a stream far ahead waits there without taking
// L1's few miss buffers from the loads in flight (Zen 4 fills L2 only for T1;
// DRAM-cold decode of q4_k/q6_k/q8_0 measured 15-40% faster than T0 there;
// Zen 3 and older treat T1 as T0). PrefetchLines<true> asks for L1 (T0).
// Always inlined: GCC's pure-const analysis takes a call that only prefetches for
// one without effects and deletes it when it is not inlined early (a wrapper
// member function lost every prefetch that way).
template <bool kIntoL1 = false>
__attribute__((always_inline)) static inline void PrefetchLines(const uint8_t* p, int64_t bytes) {
  for (int64_t o = 0; o < bytes; o += 64) {
    if constexpr (kIntoL1) {
      _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T0);
    } else {
      _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T1);
    }
  }
}

}  // namespace stet::kernels::avx2
