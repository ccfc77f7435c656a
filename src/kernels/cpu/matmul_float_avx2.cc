// AVX2 MatMul for f32/f16/bf16 weights, tiled RN weight rows x RM activation
// rows so each weight vector load feeds several outputs. Numerics: every
// output keeps its own 8-lane accumulator (element k -> lane k%8, fma in
// increasing k; the tail updates only its real lanes), fixed lane tree: equal
// to ref/matmul_float.cc bit for bit, independent of m and tiling (matmul_test.cc).
#include <immintrin.h>

#include <cstring>

#include "base/check.h"
#include "kernels/cpu/avx2_util.h"
#include "kernels/internal.h"

namespace stet::kernels::avx2 {

namespace {

template <DType T>
constexpr int kElemBytes = T == DType::kF32 ? 4 : 2;

// Eight weights starting at element j, widened to float (exact).
template <DType T>
inline __m256 LoadW8(const uint8_t* row, int64_t j) {
  if constexpr (T == DType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + j);
  } else if constexpr (T == DType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * j)));
  } else {
    const __m256i h =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * j)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
}

// The last n < 8 weights from element j, zero-padded (padding lanes are never
// written back, see the blend in Tile).
template <DType T>
inline __m256 LoadWTail(const uint8_t* row, int64_t j, int64_t n) {
  alignas(32) uint8_t tmp[32] = {};
  std::memcpy(tmp, row + j * kElemBytes<T>, static_cast<size_t>(n) * kElemBytes<T>);
  return LoadW8<T>(tmp, 0);
}

// y[i * ldy + r] for RM activation rows (x rows k apart) and RN weight rows.
template <DType T, int RN, int RM>
void Tile(const uint8_t* w, int64_t w_stride, const float* x, int64_t k, float* y, int64_t ldy) {
  __m256 acc[RM][RN];
  STET_UNROLL
  for (int i = 0; i < RM; ++i) STET_UNROLL
  for (int n = 0; n < RN; ++n) acc[i][n] = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= k; j += 8) {
    __m256 wv[RN];
    STET_UNROLL
    for (int n = 0; n < RN; ++n) wv[n] = LoadW8<T>(w + n * w_stride, j);
    STET_UNROLL
    for (int i = 0; i < RM; ++i) {
      const __m256 xv = _mm256_loadu_ps(x + i * k + j);
      STET_UNROLL
      for (int n = 0; n < RN; ++n) acc[i][n] = _mm256_fmadd_ps(wv[n], xv, acc[i][n]);
    }
  }
  if (j < k) {
    const int64_t rest = k - j;
    const __m256i mask = TailMask(rest);
    __m256 wv[RN];
    STET_UNROLL
    for (int n = 0; n < RN; ++n) wv[n] = LoadWTail<T>(w + n * w_stride, j, rest);
    STET_UNROLL
    for (int i = 0; i < RM; ++i) {
      const __m256 xv = _mm256_maskload_ps(x + i * k + j, mask);
      STET_UNROLL
      for (int n = 0; n < RN; ++n) {
        acc[i][n] = _mm256_blendv_ps(acc[i][n], _mm256_fmadd_ps(wv[n], xv, acc[i][n]),
                                     _mm256_castsi256_ps(mask));
      }
    }
  }
  STET_UNROLL
  for (int i = 0; i < RM; ++i) STET_UNROLL
  for (int n = 0; n < RN; ++n) y[i * ldy + n] = CombineLanes8(acc[i][n]);
}

// Measured on Zen 4 (576x1536 and 1536x576): decode f16 with 8 independent
// chains beat 4; f32/bf16 (more bytes or more uops per load) spill at 8 and do
// best with 4; prefill 3x4 (12 accumulators + 3 weight vectors + 1 activation =
// 16 registers) beat 4x2, 4x3, 2x4 and 8x1.
template <DType T>
constexpr int kDecodeRN = T == DType::kF16 ? 8 : 4;  // weight rows per tile when m == 1
constexpr int kRN = 3;                               // weight rows per tile (prefill)
constexpr int kRM = 4;                               // activation rows per tile (prefill)

template <DType T, int RN>
void RowTile(const MatMulArgs& a, const uint8_t* w, int64_t r) {
  const WeightView& wv = *a.w;
  const int64_t k = wv.cols;
  int64_t i = 0;
  for (; i + kRM <= a.m; i += kRM) {
    Tile<T, RN, kRM>(w, wv.row_bytes, a.x + i * k, k, a.y + i * wv.rows + r, wv.rows);
  }
  for (; i < a.m; ++i) {
    Tile<T, RN, 1>(w, wv.row_bytes, a.x + i * k, k, a.y + i * wv.rows + r, wv.rows);
  }
}

template <DType T>
void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  const WeightView& wv = *a.w;
  const auto* base = static_cast<const uint8_t*>(wv.data);
  int64_t r = r0;
  if (a.m == 1) {
    for (; r + kDecodeRN<T> <= r1; r += kDecodeRN<T>) {
      Tile<T, kDecodeRN<T>, 1>(base + r * wv.row_bytes, wv.row_bytes, a.x, wv.cols, a.y + r,
                               wv.rows);
    }
  } else {
    for (; r + kRN <= r1; r += kRN) RowTile<T, kRN>(a, base + r * wv.row_bytes, r);
  }
  for (; r < r1; ++r) RowTile<T, 1>(a, base + r * wv.row_bytes, r);
}

}  // namespace

void MatMulFloatRows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  switch (a.w->type) {
    case DType::kF32:
      Rows<DType::kF32>(a, r0, r1);
      break;
    case DType::kF16:
      Rows<DType::kF16>(a, r0, r1);
      break;
    case DType::kBF16:
      Rows<DType::kBF16>(a, r0, r1);
      break;
    default:
      STET_CHECK_MSG(false, "MatMulFloatRows: not a float weight type");
  }
}

}  // namespace stet::kernels::avx2
