// AVX-512 MatMul for f32/f16/bf16 weights and m >= 2 activation rows. A 16-lane
// vector carries two activation rows' 8 logical lanes (ActPairs), so one fma
// advances two outputs of the same weight row; the weight chunk is broadcast to
// both halves. Tiles are RN weight rows x RP row pairs (32 registers fit 24
// accumulators). Numerics: each output still has its own 8-lane accumulator
// (element k -> lane k%8, fma in increasing k) and the fixed lane tree, so it
// equals ref/matmul_float.cc bit for bit. The zero padding past k adds
// fma(0, 0, lane) = lane exactly (a lane is never -0: it starts at +0 and
// round-to-nearest never yields -0 from a +0 addend).
#include <immintrin.h>

#include <cstring>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"

namespace stet::kernels::avx512 {

namespace {

template <DType T>
constexpr int kElemBytes = T == DType::kF32 ? 4 : 2;

// Weights 8c..8c+7 of a row, widened to float and broadcast to both halves.
template <DType T>
inline __m512 LoadW(const uint8_t* row, int64_t c) {
  if constexpr (T == DType::kF32) {
    return _mm512_broadcast_f32x8(_mm256_loadu_ps(reinterpret_cast<const float*>(row) + 8 * c));
  } else {
    const __m256i h = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * c)));
    if constexpr (T == DType::kF16) {
      return _mm512_cvtph_ps(h);
    } else {
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
  }
}

// The last k % 8 weights of a row from chunk c, zero-padded.
template <DType T>
inline __m512 LoadWTail(const uint8_t* row, int64_t c, int64_t n) {
  alignas(64) uint8_t tmp[64] = {};
  std::memcpy(tmp, row + 8 * c * kElemBytes<T>, static_cast<size_t>(n) * kElemBytes<T>);
  return LoadW<T>(tmp, 0);
}

// Outputs for weight rows r..r+RN-1 and row pairs p0..p0+RP-1: y[i * ldy + n].
template <DType T, int RN, int RP>
void Tile(const uint8_t* w, int64_t w_stride, const ActPairs& xp, int64_t p0, float* y,
          int64_t ldy) {
  __m512 acc[RP][RN];
  STET_UNROLL
  for (int p = 0; p < RP; ++p) STET_UNROLL
  for (int n = 0; n < RN; ++n) acc[p][n] = _mm512_setzero_ps();
  const int64_t full = xp.k / 8, rest = xp.k % 8;
  const float* xb = xp.x2 + p0 * xp.chunks * 16;
  for (int64_t c = 0; c < full; ++c) {
    __m512 wv[RN];
    STET_UNROLL
    for (int n = 0; n < RN; ++n) wv[n] = LoadW<T>(w + n * w_stride, c);
    STET_UNROLL
    for (int p = 0; p < RP; ++p) {
      const __m512 xv = _mm512_loadu_ps(xb + (p * xp.chunks + c) * 16);
      STET_UNROLL
      for (int n = 0; n < RN; ++n) acc[p][n] = _mm512_fmadd_ps(wv[n], xv, acc[p][n]);
    }
  }
  if (rest != 0) {
    __m512 wv[RN];
    STET_UNROLL
    for (int n = 0; n < RN; ++n) wv[n] = LoadWTail<T>(w + n * w_stride, full, rest);
    STET_UNROLL
    for (int p = 0; p < RP; ++p) {
      const __m512 xv = _mm512_loadu_ps(xb + (p * xp.chunks + full) * 16);
      STET_UNROLL
      for (int n = 0; n < RN; ++n) acc[p][n] = _mm512_fmadd_ps(wv[n], xv, acc[p][n]);
    }
  }
  STET_UNROLL
  for (int p = 0; p < RP; ++p) {
    const int64_t i = 2 * (p0 + p);
    STET_UNROLL
    for (int n = 0; n < RN; ++n) {
      y[i * ldy + n] = avx2::CombineLanes8(_mm512_castps512_ps256(acc[p][n]));
      if (i + 1 < xp.m) {
        y[(i + 1) * ldy + n] = avx2::CombineLanes8(_mm512_extractf32x8_ps(acc[p][n], 1));
      }
    }
  }
}

// Measured on Zen 5 (576x1536 and 1536x576, m = 512): 4x6 and 4x4 beat 2x8 and
// 6x4 (RN x RP).
constexpr int kRN = 4;
constexpr int kRP = 6;
static_assert(kRP <= 6, "PairSweep's remainder switch covers fewer than 6 pairs");
// Row pairs per block: the block's activations (64 rows x K floats) stay in L2
// while every weight row of this thread streams past them.
constexpr int64_t kPairBlock = 30;  // a multiple of kRP

template <DType T, int RN>
void PairSweep(const MatMulArgs& a, const uint8_t* w, int64_t r, int64_t p0, int64_t p1) {
  const WeightView& wv = *a.w;
  int64_t p = p0;
  for (; p + kRP <= p1; p += kRP) Tile<T, RN, kRP>(w, wv.row_bytes, *a.xp, p, a.y + r, wv.rows);
  // The last few pairs (fewer than kRP) in one narrower tile.
  WithCount<kRP - 1>(static_cast<int>(p1 - p), [&](auto np) {
    Tile<T, RN, decltype(np)::value>(w, wv.row_bytes, *a.xp, p, a.y + r, wv.rows);
  });
}

template <DType T>
void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  const WeightView& wv = *a.w;
  const auto* base = static_cast<const uint8_t*>(wv.data);
  for (int64_t pb = 0; pb < a.xp->pairs; pb += kPairBlock) {
    const int64_t pe = pb + kPairBlock < a.xp->pairs ? pb + kPairBlock : a.xp->pairs;
    int64_t r = r0;
    for (; r + kRN <= r1; r += kRN) PairSweep<T, kRN>(a, base + r * wv.row_bytes, r, pb, pe);
    for (; r < r1; ++r) PairSweep<T, 1>(a, base + r * wv.row_bytes, r, pb, pe);
  }
}

}  // namespace

void PairActivations(const float* x, ActPairs* xp, int64_t p0, int64_t p1) {
  const int64_t k = xp->k, full = k / 8;
  for (int64_t p = p0; p < p1; ++p) {
    float* out = xp->x2 + p * xp->chunks * 16;
    for (int h = 0; h < 2; ++h) {
      const int64_t i = 2 * p + h;
      if (i >= xp->m) {
        for (int64_t c = 0; c < xp->chunks; ++c) {
          _mm256_storeu_ps(out + c * 16 + 8 * h, _mm256_setzero_ps());
        }
        continue;
      }
      const float* row = x + i * k;
      for (int64_t c = 0; c < full; ++c) {
        _mm256_storeu_ps(out + c * 16 + 8 * h, _mm256_loadu_ps(row + 8 * c));
      }
      if (full < xp->chunks) {
        const __m256i mask = avx2::TailMask(k - 8 * full);
        _mm256_storeu_ps(out + full * 16 + 8 * h, _mm256_maskload_ps(row + 8 * full, mask));
      }
    }
  }
}

namespace {
constexpr auto kKernels = FloatKernelRows(
    {"avx512.pairs", Isa::kAvx512, kSmallAndPrefill, Packed::kNo, ActLayout::kPairs},
    [](auto t) { return Rows<decltype(t)::value>; });
}  // namespace

std::span<const MatMulKernel> MatMulFloatKernels() { return kKernels; }

}  // namespace stet::kernels::avx512
