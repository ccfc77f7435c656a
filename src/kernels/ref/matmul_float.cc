// Scalar reference MatMul for f32/f16/bf16 weights: the oracle the AVX2 path
// must equal bit for bit. Numerics: per output the canonical 8-lane sum (element
// k -> lane k%8, fma in increasing k, fixed lane tree); depends on w.cols only,
// never on m, the row range or threads (matmul_test.cc pins all three).
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/internal.h"
#include "numerics/half.h"

namespace stet::kernels::ref {

namespace {

template <DType T>
void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  const WeightView& w = *a.w;
  const int64_t k = w.cols;
  for (int64_t i = 0; i < a.m; ++i) {
    const float* x = a.x + i * k;
    for (int64_t r = r0; r < r1; ++r) {
      const auto* row = static_cast<const uint8_t*>(w.data) + r * w.row_bytes;
      float lanes[kLanes] = {};
      for (int64_t j = 0; j < k; ++j)
        lanes[j % kLanes] = std::fma(LoadElement<T>(row, j), x[j], lanes[j % kLanes]);
      a.y[i * w.rows + r] = CombineLanes(lanes);
    }
  }
}

constexpr auto kKernels =
    FloatKernelRows({"ref.float", Isa::kScalar, kEveryClass, Packed::kNo, ActLayout::kFloat},
                    [](auto t) { return Rows<decltype(t)::value>; });

}  // namespace

std::span<const MatMulKernel> MatMulFloatKernels() { return kKernels; }

}  // namespace stet::kernels::ref
