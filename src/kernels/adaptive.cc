#include "kernels/adaptive.h"

#include <algorithm>
#include <vector>

#include "base/enum_names.h"
#include "base/thread_pool.h"

namespace stet {

namespace {

constexpr EnumName<NumericsMode> kNumericsModeNames[] = {{NumericsMode::kInvariant, "invariant"},
                                                         {NumericsMode::kAdaptive, "adaptive"},
                                                         {NumericsMode::kFast, "fast"},
                                                         {NumericsMode::kPrecise, "precise"}};

}  // namespace

const char* NumericsModeName(NumericsMode m) { return NameOf(kNumericsModeNames, m, "?"); }

std::optional<NumericsMode> NumericsFromName(std::string_view name) {
  return ValueOf(kNumericsModeNames, name);
}

namespace kernels {

namespace {

// Scratch of the split-K path; grows, never shrinks. The caller's partial sums
// are written by pool workers while the caller waits in ParallelFor.
thread_local std::vector<float> tls_x_part;
thread_local std::vector<float> tls_partial;

}  // namespace

void MatMulAdaptive(const WeightView& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                    Isa isa) {
  const int n_threads = pool ? pool->size() : 1;
  auto traits = GetDTypeTraits(static_cast<uint32_t>(w.type));
  // K-quant blocks are 256 wide; every split must fall on a block boundary.
  const int64_t block = traits->block_elems == 1 ? 8 : traits->block_elems;
  const int64_t n_blocks = w.cols / block;
  // Split-K for small batches, as a tuner would pick it: a multiple of the
  // thread count (so the split is balanced) that follows the row count.
  const int64_t splits =
      std::min<int64_t>(n_blocks, m < kAdaptiveSplitRows ? n_threads * (1 + m % 3) : 1);
  if (splits <= 1 || w.cols % block != 0) {
    MatMul(w, x, m, y, pool, isa);
    return;
  }
  // Each split is a single-threaded MatMul over its K range into its own
  // partial sums; threads take whole splits; the partials are added in split
  // order. The result depends on `splits`, i.e. on m: batch-variant by design.
  std::vector<float>& partial = tls_partial;
  const size_t out = static_cast<size_t>(m * w.rows);
  if (partial.size() < out * splits) partial.resize(out * splits);
  auto run_splits = [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      int64_t b0, b1;
      PartitionRange(n_blocks, 1, static_cast<int>(s), static_cast<int>(splits), &b0, &b1);
      const int64_t k0 = b0 * block, k1 = b1 * block;
      float* ps = partial.data() + s * out;
      if (k1 <= k0) {
        std::fill(ps, ps + out, 0.0f);
        continue;
      }
      WeightView sub = w;
      sub.cols = k1 - k0;
      sub.data = static_cast<const uint8_t*>(w.data) + RowBytes(w.type, k0);
      sub.packed = nullptr;  // the packed copy covers whole rows only
      if (tls_x_part.size() < static_cast<size_t>(m * sub.cols)) tls_x_part.resize(m * sub.cols);
      for (int64_t i = 0; i < m; ++i) {
        std::copy(x + i * w.cols + k0, x + i * w.cols + k1, &tls_x_part[i * sub.cols]);
      }
      MatMul(sub, tls_x_part.data(), m, ps, nullptr, isa);
    }
  };
  if (pool == nullptr || n_threads == 1) {
    run_splits(0, splits);
  } else {
    pool->ParallelFor(splits, 1, run_splits);
  }
  for (size_t i = 0; i < out; ++i) {
    float acc = partial[i];
    for (int64_t s = 1; s < splits; ++s) acc += partial[s * out + i];
    y[i] = acc;
  }
}

}  // namespace kernels
}  // namespace stet
