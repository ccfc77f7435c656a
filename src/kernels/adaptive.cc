#include "kernels/adaptive.h"

#include <algorithm>
#include <vector>

namespace stet {

const char* NumericsModeName(NumericsMode m) {
  return m == NumericsMode::kInvariant ? "invariant" : "adaptive";
}

namespace kernels {

void MatMulAdaptive(const WeightView& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                    Isa isa) {
  const int n_threads = pool ? pool->size() : 1;
  auto traits = GetDTypeTraits(static_cast<uint32_t>(w.type));
  // K-quant blocks are 256 wide; every split must fall on a block boundary.
  const int64_t block = traits->block_elems == 1 ? 8 : traits->block_elems;
  const int64_t n_blocks = w.cols / block;
  // Split-K for small batches; the split count follows the shape, as a tuner's choice would.
  const int64_t splits =
      std::min<int64_t>(n_blocks, m < kAdaptiveSplitRows ? n_threads + 1 + m % 3 : 1);
  if (splits <= 1 || w.cols % block != 0) {
    MatMul(w, x, m, y, pool, isa);
    return;
  }
  std::vector<float> partial(static_cast<size_t>(m) * w.rows);
  std::vector<float> xs;
  std::fill(y, y + m * w.rows, 0.0f);
  for (int64_t s = 0; s < splits; ++s) {
    int64_t b0, b1;
    PartitionRange(n_blocks, 1, static_cast<int>(s), static_cast<int>(splits), &b0, &b1);
    const int64_t k0 = b0 * block, k1 = b1 * block;
    if (k1 <= k0) continue;
    WeightView sub = w;
    sub.cols = k1 - k0;
    sub.data = static_cast<const uint8_t*>(w.data) + RowBytes(w.type, k0);
    xs.resize(static_cast<size_t>(m) * sub.cols);
    for (int64_t i = 0; i < m; ++i) std::copy(x + i * w.cols + k0, x + i * w.cols + k1, &xs[i * sub.cols]);
    MatMul(sub, xs.data(), m, partial.data(), pool, isa);
    for (int64_t i = 0; i < m * w.rows; ++i) y[i] += partial[i];
  }
}

}  // namespace kernels
}  // namespace stet
