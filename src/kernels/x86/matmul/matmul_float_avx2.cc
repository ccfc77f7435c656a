// AVX2 MatMul for f32/f16/bf16 weights, tiled RN weight rows x RM activation
// rows so each weight vector load feeds several outputs. Decode of f16/bf16
// reads the packed copy (8 rows interleaved per 8-element chunk, pack.cc): the
// same loads at other addresses, streaming memory sequentially instead of 8
// rows side by side. Numerics: every
// output keeps its own 8-lane accumulator (element k -> lane k%8, fma in
// increasing k; the tail updates only its real lanes), fixed lane tree: equal
// to ref/matmul_float.cc bit for bit, independent of m and tiling (matmul_test.cc).
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"

namespace stet::kernels::avx2 {

namespace {

template <DType T>
constexpr int kElemBytes = T == DType::kF32 ? 4 : 2;

// Eight weights at p, widened to float (exact).
template <DType T>
inline __m256 LoadW8(const uint8_t* p) {
  if constexpr (T == DType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  } else if constexpr (T == DType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
}

// The last n < 8 weights of a row-major row from element j, zero-padded
// (padding lanes are never written back, see the blend in Tile).
template <DType T>
inline __m256 LoadWTail(const uint8_t* row, int64_t j, int64_t n) {
  alignas(32) uint8_t tmp[32] = {};
  std::memcpy(tmp, row + j * kElemBytes<T>, static_cast<size_t>(n) * kElemBytes<T>);
  return LoadW8<T>(tmp);
}

// Where a weight row's 8-element chunks are: chunk c of row n at
// row[n] + c * chunk_step (row-major: 8 elements apart; packed: 8 rows apart).
template <int RN>
struct RowChunks {
  const uint8_t* row[RN];
  int64_t chunk_step;
};

// y[i * ldy + r] for RM activation rows (x rows k apart) and RN weight rows.
template <DType T, int RN, int RM>
void Tile(const RowChunks<RN>& w, const float* x, int64_t k, float* y, int64_t ldy) {
  __m256 acc[RM][RN];
  STET_UNROLL
  for (int i = 0; i < RM; ++i) STET_UNROLL
  for (int n = 0; n < RN; ++n) acc[i][n] = _mm256_setzero_ps();
  int64_t j = 0;
  for (int64_t off = 0; j + 8 <= k; j += 8, off += w.chunk_step) {
    __m256 wv[RN];
    STET_UNROLL
    for (int n = 0; n < RN; ++n) wv[n] = LoadW8<T>(w.row[n] + off);
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
    for (int n = 0; n < RN; ++n) wv[n] = LoadWTail<T>(w.row[n], j, rest);  // row-major only
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

// Row r's chunks: in the packed copy when asked and there is one (cols % 8 == 0
// then). Only decode reads it: there it turns 8 short row streams into one
// sequential stream (SmolLM2's 576-wide rows: 1.7x on Zen 3); batched tiles
// measured faster on the row-major matrix.
template <DType T, int RN>
RowChunks<RN> ChunksOf(const WeightView& wv, int64_t r, bool use_packed) {
  RowChunks<RN> c;
  if (use_packed && wv.packed != nullptr) {
    const int64_t group_bytes = 8 * wv.cols * kElemBytes<T>;
    STET_UNROLL
    for (int n = 0; n < RN; ++n) {
      c.row[n] = static_cast<const uint8_t*>(wv.packed) + (r + n) / 8 * group_bytes +
                 (r + n) % 8 * 8 * kElemBytes<T>;
    }
    c.chunk_step = 64 * kElemBytes<T>;
  } else {
    STET_UNROLL
    for (int n = 0; n < RN; ++n)
      c.row[n] = static_cast<const uint8_t*>(wv.data) + (r + n) * wv.row_bytes;
    c.chunk_step = 8 * kElemBytes<T>;
  }
  return c;
}

// Activation rows per block of a prefill: the block (m_block x k floats) stays
// in L2 (Zen 3 has 512 KiB) while every weight tile of the range passes over
// it; without the blocking a 512-row batch streamed its activations from L3
// once per 3 weight rows.
constexpr int64_t kActBlockBytes = 192 * 1024;

int64_t ActBlockRows(int64_t k) {
  const int64_t rows = kActBlockBytes / (k * 4) / kRM * kRM;
  return rows < kRM ? kRM : rows;
}

// RN weight rows from r widened to f32 once into buf (row n at buf + n * k; f16
// and bf16 widen exactly), so a block's tiles load plain floats: the widening
// left the FMA ports. f32 rows are used in place.
template <DType T, int RN>
RowChunks<RN> WidenRows(const WeightView& wv, int64_t r, std::vector<float>* buf) {
  const RowChunks<RN> w = ChunksOf<T, RN>(wv, r, /*use_packed=*/false);
  if constexpr (T == DType::kF32) {
    return w;
  } else {
    const int64_t k = wv.cols;
    if (buf->size() < static_cast<size_t>(RN * k + 8)) buf->resize(static_cast<size_t>(RN * k + 8));
    RowChunks<RN> f;
    STET_UNROLL
    for (int n = 0; n < RN; ++n) {
      float* dst = buf->data() + n * k;
      int64_t j = 0;
      for (; j + 8 <= k; j += 8) _mm256_storeu_ps(dst + j, LoadW8<T>(w.row[n] + j * 2));
      if (j < k) {
        alignas(32) float tail[8];
        _mm256_store_ps(tail, LoadWTail<T>(w.row[n], j, k - j));
        std::memcpy(dst + j, tail, static_cast<size_t>(k - j) * 4);
      }
      f.row[n] = reinterpret_cast<const uint8_t*>(dst);
    }
    f.chunk_step = 32;
    return f;
  }
}

// Activation rows [i0, i1) against weight rows r..r+RN-1.
template <DType T, int RN>
void RowTile(const MatMulArgs& a, int64_t r, int64_t i0, int64_t i1, std::vector<float>* buf) {
  const WeightView& wv = *a.w;
  const int64_t k = wv.cols;
  const bool widen = i1 - i0 >= 2 * kRM;  // worth a pass over the tile
  constexpr DType kWide = T == DType::kF32 ? T : DType::kF32;
  int64_t i = i0;
  if (widen) {
    const RowChunks<RN> w = WidenRows<T, RN>(wv, r, buf);
    for (; i + kRM <= i1; i += kRM) {
      Tile<kWide, RN, kRM>(w, a.x + i * k, k, a.y + i * wv.rows + r, wv.rows);
    }
    for (; i < i1; ++i) Tile<kWide, RN, 1>(w, a.x + i * k, k, a.y + i * wv.rows + r, wv.rows);
    return;
  }
  const RowChunks<RN> w = ChunksOf<T, RN>(wv, r, /*use_packed=*/false);
  for (; i + kRM <= i1; i += kRM) {
    Tile<T, RN, kRM>(w, a.x + i * k, k, a.y + i * wv.rows + r, wv.rows);
  }
  for (; i < i1; ++i) Tile<T, RN, 1>(w, a.x + i * k, k, a.y + i * wv.rows + r, wv.rows);
}

thread_local std::vector<float> tls_wide;  // WidenRows' buffer, per pool thread

template <DType T>
void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  const WeightView& wv = *a.w;
  if (a.m == 1) {
    int64_t r = r0;
    for (; r + kDecodeRN<T> <= r1; r += kDecodeRN<T>) {
      Tile<T, kDecodeRN<T>, 1>(ChunksOf<T, kDecodeRN<T>>(wv, r, /*use_packed=*/true), a.x, wv.cols,
                               a.y + r, wv.rows);
    }
    for (; r < r1; ++r) RowTile<T, 1>(a, r, 0, 1, &tls_wide);
    return;
  }
  const int64_t mb = ActBlockRows(wv.cols);
  for (int64_t i0 = 0; i0 < a.m; i0 += mb) {
    const int64_t i1 = i0 + mb < a.m ? i0 + mb : a.m;
    int64_t r = r0;
    for (; r + kRN <= r1; r += kRN) RowTile<T, kRN>(a, r, i0, i1, &tls_wide);
    for (; r < r1; ++r) RowTile<T, 1>(a, r, i0, i1, &tls_wide);
  }
}

constexpr auto kKernels =
    Concat(KernelRows({"avx2.float", Isa::kAvx2, kEveryClass, Packed::kNo, ActLayout::kFloat},
                      {{DType::kF32, Rows<DType::kF32>}}),
           KernelRows({"avx2.float", Isa::kAvx2, kEveryClass, Packed::kUses, ActLayout::kFloat},
                      {{DType::kF16, Rows<DType::kF16>}, {DType::kBF16, Rows<DType::kBF16>}}));

}  // namespace

std::span<const MatMulKernel> MatMulFloatKernels() { return kKernels; }

}  // namespace stet::kernels::avx2
