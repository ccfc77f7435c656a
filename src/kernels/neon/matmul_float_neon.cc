// NEON MatMul for f32/f16/bf16 weights: per output the canonical 8-lane sum
// (element k -> lane k%8, fma in increasing k, fixed lane tree), two float32x4_t
// per logical accumulator, the k % 8 tail by scalar fma into its lanes; f16/bf16
// widen exactly. Four weight rows share each activation load. Equal to
// ref/matmul_float.cc bit for bit (matmul_test.cc).
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/neon/neon_util.h"
#include "numerics/half.h"

namespace stet::kernels::neon {

namespace {

// A row's vectors (four elements from j) and single elements, widened exactly.
template <DType T>
struct Load {
  static float32x4_t Vec(const uint8_t* row, int64_t j) {
    if constexpr (T == DType::kF32) {
      return vld1q_f32(reinterpret_cast<const float*>(row) + j);
    } else if constexpr (T == DType::kF16) {
      return LoadF16x4(reinterpret_cast<const uint16_t*>(row) + j);
    } else {
      return LoadBF16x4(reinterpret_cast<const uint16_t*>(row) + j);
    }
  }
  static float One(const uint8_t* row, int64_t j) { return LoadElement<T>(row, j); }
};

constexpr int kTile = 4;  // weight rows per pass over one activation row

template <typename Load, int kRows>
void Tile(const uint8_t* const* rows, const float* x, int64_t k, float* y) {
  Lanes8 acc[kRows];
  for (int t = 0; t < kRows; ++t) acc[t] = ZeroLanes();
  int64_t j = 0;
  for (; j + 8 <= k; j += 8) {
    const float32x4_t x0 = vld1q_f32(x + j), x1 = vld1q_f32(x + j + 4);
    for (int t = 0; t < kRows; ++t) {
      acc[t].lo = vfmaq_f32(acc[t].lo, Load::Vec(rows[t], j), x0);
      acc[t].hi = vfmaq_f32(acc[t].hi, Load::Vec(rows[t], j + 4), x1);
    }
  }
  for (int t = 0; t < kRows; ++t) {
    if (j == k) {
      y[t] = CombineLanes8(acc[t]);
      continue;
    }
    float lanes[kLanes];
    StoreLanes(acc[t], lanes);
    // lanes[i - j] = fma(w_i, x_i, lane): the reference's argument order (w, x).
    for (int64_t i = j; i < k; ++i)
      lanes[i - j] = std::fma(Load::One(rows[t], i), x[i], lanes[i - j]);
    y[t] = CombineLanes(lanes);
  }
}

template <typename Load>
void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  const WeightView& w = *a.w;
  const int64_t k = w.cols;
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t i = 0; i < a.m; ++i) {
    const float* x = a.x + i * k;
    float* yi = a.y + i * w.rows;
    int64_t r = r0;
    for (; r + kTile <= r1; r += kTile) {
      const uint8_t* rows[kTile];
      for (int t = 0; t < kTile; ++t) rows[t] = base + (r + t) * w.row_bytes;
      Tile<Load, kTile>(rows, x, k, yi + r);
    }
    for (; r < r1; ++r) {
      const uint8_t* row = base + r * w.row_bytes;
      Tile<Load, 1>(&row, x, k, yi + r);
    }
  }
}

constexpr auto kKernels =
    FloatKernelRows({"neon.float", Isa::kNeon, kEveryClass, Packed::kNo, ActLayout::kFloat},
                    [](auto t) { return Rows<Load<decltype(t)::value>>; });

}  // namespace

std::span<const MatMulKernel> MatMulFloatKernels() { return kKernels; }

}  // namespace stet::kernels::neon
