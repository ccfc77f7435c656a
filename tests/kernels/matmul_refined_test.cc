// MatMulGroupRefined (the invariant mode's MatMul): for every weight type, ISA,
// pool and row class, bit for bit the composition it replaces — the scalar
// ActResidual r of x, the scalar MatMul of the stacked rows [x; r] (2m rows)
// and the scalar Add of the two halves; float types: plain MatMul. Groups and
// mixed groups included.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/internal.h"
#include "kernels/kernels.h"

namespace stet::kernels {
namespace {

using testing::RandomActivations;
using testing::RandomWeights;
using testing::SameBits;

struct Matrix {
  DType type;
  int64_t rows, k;
  std::vector<uint8_t> w, packed;
  WeightView view;
};

Matrix MakeMatrix(std::mt19937& rng, DType t, int64_t rows, int64_t k) {
  Matrix a{t, rows, k, RandomWeights(rng, t, rows, k), {}, {}};
  a.view = {t, rows, k, a.w.data(), RowBytes(t, k)};
  // The packed copy the model would make, so the rows that read it run too.
  const int64_t bytes = PackedBytes(a.view);
  if (bytes > 0) {
    a.packed.resize(static_cast<size_t>(bytes));
    PackWeights(a.view, a.packed.data());
    a.view.packed = a.packed.data();
  }
  return a;
}

// The composition MatMulGroupRefined stands for, all scalar.
std::vector<float> Composed(const Matrix& a, const std::vector<float>& x, int64_t m) {
  const int64_t k = a.k, n = a.rows;
  std::vector<float> y(static_cast<size_t>(m * n));
  WeightView plain = a.view;
  plain.packed = nullptr;
  if (ActQuantBlock(a.type) == 0) {
    MatMul(plain, x.data(), m, y.data(), nullptr, Isa::kScalar);
    return y;
  }
  std::vector<float> stacked(x);
  stacked.resize(static_cast<size_t>(2 * m * k));
  ActResidual(a.type, x.data(), m, k, stacked.data() + m * k, nullptr, Isa::kScalar);
  std::vector<float> y2(static_cast<size_t>(2 * m * n));
  MatMul(plain, stacked.data(), 2 * m, y2.data(), nullptr, Isa::kScalar);
  Add(y2.data(), y2.data() + m * n, m * n, y.data(), Isa::kScalar);
  return y;
}

// MatMulGroupRefined over the whole group, into fresh buffers.
std::vector<std::vector<float>> RunRefined(const std::vector<Matrix>& ms,
                                           const std::vector<float>& x, int64_t m, ThreadPool* pool,
                                           Isa isa) {
  std::vector<std::vector<float>> got(ms.size());
  const WeightView* ws[kMaxMatMulGroup];
  float* ys[kMaxMatMulGroup];
  for (size_t j = 0; j < ms.size(); ++j) {
    got[j].assign(static_cast<size_t>(m * ms[j].rows), -777.0f);
    ws[j] = &ms[j].view;
    ys[j] = got[j].data();
  }
  MatMulGroupRefined(ws, static_cast<int>(ms.size()), x.data(), m, ys, pool, isa);
  return got;
}

int64_t LengthFor(DType t) {
  const int block = ActQuantBlock(t);
  return block == 0 ? 72 : block == kQK ? 288 : 512;
}

class MatMulRefinedTest : public ::testing::TestWithParam<DType> {};

// m = 1 (decode: 2 rows, the small class), 3 and 9 (small), 20 (batch), 70
// (prefill, and threads split the residual rows).
TEST_P(MatMulRefinedTest, EqualsTheStackedRowsAndAnAdd) {
  const DType t = GetParam();
  std::mt19937 rng(77 + static_cast<int>(t));
  const int64_t k = LengthFor(t);
  std::vector<Matrix> ms;
  for (int64_t rows : {37, 16, 5}) ms.push_back(MakeMatrix(rng, t, rows, k));
  ThreadPool pool(3);
  for (int64_t m : {1, 3, 9, 20, 70}) {
    const auto x = RandomActivations(rng, m * k);
    std::vector<std::vector<float>> want;
    for (const Matrix& a : ms) want.push_back(Composed(a, x, m));
    for (Isa isa : testing::AvailableIsas()) {
      for (ThreadPool* pl : {static_cast<ThreadPool*>(nullptr), &pool}) {
        const auto got = RunRefined(ms, x, m, pl, isa);
        for (size_t j = 0; j < ms.size(); ++j) {
          ASSERT_TRUE(SameBits(want[j].data(), got[j].data(), m * ms[j].rows))
              << DTypeName(t) << " " << IsaName(isa) << " m=" << m << " matrix " << j
              << (pl ? " pool" : "") << " first diff at "
              << testing::FirstDiff(want[j].data(), got[j].data(), m * ms[j].rows);
        }
      }
    }
  }
}

// A group of different types (q6_k attn_v among q4_k; a float matrix) goes
// matrix by matrix: each as its own refined (or, float, plain) call.
TEST(MatMulRefinedMixed, EachMatrixAsItsOwnCall) {
  std::mt19937 rng(5);
  const int64_t k = 512;
  std::vector<Matrix> ms;
  ms.push_back(MakeMatrix(rng, DType::kQ4_K, 40, k));
  ms.push_back(MakeMatrix(rng, DType::kQ6_K, 24, k));
  ms.push_back(MakeMatrix(rng, DType::kF16, 8, k));
  ms.push_back(MakeMatrix(rng, DType::kQ8_0, 16, k));
  ThreadPool pool(2);
  for (int64_t m : {1, 4}) {
    const auto x = RandomActivations(rng, m * k);
    for (Isa isa : testing::AvailableIsas()) {
      const auto got = RunRefined(ms, x, m, &pool, isa);
      for (size_t j = 0; j < ms.size(); ++j) {
        const auto want = Composed(ms[j], x, m);
        EXPECT_TRUE(SameBits(want.data(), got[j].data(), m * ms[j].rows))
            << DTypeName(ms[j].type) << " " << IsaName(isa) << " m=" << m;
      }
    }
  }
}

std::string TypeName(const ::testing::TestParamInfo<DType>& info) { return DTypeName(info.param); }

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, MatMulRefinedTest, ::testing::ValuesIn(ComputableDTypes()),
                         TypeName);

}  // namespace
}  // namespace stet::kernels
