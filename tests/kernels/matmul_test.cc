// MatMul, every weight type (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k,
// q3_k, q4_k, q5_k, q6_k, iq4_xs):
// AVX2, AVX-512 and NEON (also without dotprod) == scalar bit for bit; row r of a
// batch of m = 1..17 equals its m = 1
// result (R1); pool sizes 1..4 give the same bits (R2); and the result is
// within gamma(n) * sum|terms| of a float64 computation on the dequantized
// weights and (for quant types) the quantized activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/internal.h"
#include "kernels/kernels.h"
#include "kernels/matmul_table.h"

namespace stet::kernels {
namespace {

using testing::RandomActivations;
using testing::RandomWeights;
using testing::SameBits;

bool IsFloat(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }
// The 256-element super-block types (K-quants, iq4_xs): activations per ActQ8K.
bool IsKQuant(DType t) { return GetDTypeTraits(static_cast<uint32_t>(t))->block_elems == kQKK; }

// Lengths that exercise tails: for float types any K, for 32-block types multiples
// of 32 (incl. not multiples of 8 blocks), for super-block types multiples of 256
// (incl. more than 8 superblocks, so lanes wrap).
std::vector<int64_t> Lengths(DType t) {
  if (IsFloat(t)) return {1, 2, 7, 8, 9, 15, 16, 33, 64, 100, 257, 576};
  if (IsKQuant(t)) return {256, 512, 768, 2048, 2304, 2560};
  return {32, 64, 96, 224, 256, 288, 544, 576, 1056};
}

struct Problem {
  DType type;
  int64_t rows, k;
  std::vector<uint8_t> w;
  WeightView view() const { return {type, rows, k, w.data(), RowBytes(type, k)}; }
};

Problem MakeProblem(std::mt19937& rng, DType t, int64_t rows, int64_t k) {
  Problem p{t, rows, k, RandomWeights(rng, t, rows, k)};
  return p;
}

std::vector<float> RunMatMul(const Problem& p, const float* x, int64_t m, ThreadPool* pool,
                             Isa isa) {
  std::vector<float> y(static_cast<size_t>(m * p.rows), -777.0f);
  MatMul(p.view(), x, m, y.data(), pool, isa);
  return y;
}

class MatMulTest : public ::testing::TestWithParam<DType> {};

// `isa` equals the scalar reference bit for bit on every length of t, for each
// weight row count and activation row count m given (m = 300 only up to
// k = 600: the scalar oracle is slow).
void ExpectEqualsScalar(Isa isa, DType t, unsigned seed, std::initializer_list<int64_t> row_counts,
                        std::initializer_list<int64_t> ms) {
  std::mt19937 rng(seed);
  for (int64_t k : Lengths(t)) {
    for (int64_t rows : row_counts) {
      const Problem p = MakeProblem(rng, t, rows, k);
      for (int64_t m : ms) {
        if (m == 300 && k > 600) continue;
        const auto x = RandomActivations(rng, m * k);
        const auto ys = RunMatMul(p, x.data(), m, nullptr, Isa::kScalar);
        const auto ya = RunMatMul(p, x.data(), m, nullptr, isa);
        ASSERT_TRUE(SameBits(ys.data(), ya.data(), m * rows))
            << DTypeName(t) << " k=" << k << " rows=" << rows << " m=" << m << " first diff at "
            << testing::FirstDiff(ys.data(), ya.data(), m * rows);
      }
    }
  }
}

// m = 17 and 300: the float prefill's widened weight tiles and its several
// L2 blocks of activation rows.
TEST_P(MatMulTest, Avx2EqualsScalar) {
  STET_REQUIRE_AVX2();
  ExpectEqualsScalar(Isa::kAvx2, GetParam(), 1234 + static_cast<int>(GetParam()),
                     {1, 3, 4, 5, 9, 21}, {1, 2, 3, 5, 17, 300});
}

TEST_P(MatMulTest, NeonEqualsScalar) {
  STET_REQUIRE_NEON();
  ExpectEqualsScalar(Isa::kNeon, GetParam(), 1234 + static_cast<int>(GetParam()),
                     {1, 3, 4, 5, 9, 21}, {1, 2, 3, 5});
}

// The AVX-512 batched paths (float pairs, q8_0 VNNI groups of 16 rows) against
// the scalar reference: m covers odd pairs, partial and several groups, and
// more than one 256-row block.
TEST_P(MatMulTest, Avx512EqualsScalar) {
  STET_REQUIRE_AVX512();
  ExpectEqualsScalar(Isa::kAvx512, GetParam(), 4321 + static_cast<int>(GetParam()), {1, 5, 9, 21},
                     {1, 2, 3, 16, 17, 35, 300});
}

// Every row of the kernel table for this type that runs here (kernels/matmul_table.h),
// called directly whatever the row count (not only its classes), equals the scalar
// reference on the unpacked matrix: packed copies where the row reads them, row
// counts that are not a multiple of the 16-row group, pool splits included. A new
// row is tested here by construction; so is a row the default dispatch never picks
// (NEON without dotprod on a dotprod CPU, the AVX2 tiles of a packed type).
// Every SIMD row of type t that runs here against the scalar reference, for each
// k, weight-row count and activation-row count m given; returns the rows tested.
int ExpectEveryRowEqualsScalar(DType t, std::mt19937& rng, std::span<const int64_t> ks,
                               std::span<const int64_t> row_counts, std::span<const int64_t> ms) {
  ThreadPool pool(3);
  int rows_tested = 0;
  for (const MatMulKernel& kern : MatMulKernels()) {
    if (kern.type != t || !KernelRunsHere(kern) || kern.isa == Isa::kScalar) continue;
    ++rows_tested;
    for (int64_t k : ks) {
      for (int64_t rows : row_counts) {
        const Problem p = MakeProblem(rng, t, rows, k);
        WeightView wv = p.view();
        std::vector<uint8_t> packed;
        if (kern.packed != Packed::kNo && PackedBytes(wv) > 0) {
          packed.resize(static_cast<size_t>(PackedBytes(wv)) + 64);
          void* aligned =
              packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
          PackWeights(wv, aligned);
          wv.packed = aligned;
        }
        EXPECT_TRUE(kern.packed != Packed::kNeeds || wv.packed != nullptr) << kern.name;
        if (kern.packed == Packed::kNeeds && wv.packed == nullptr) continue;
        for (int64_t m : ms) {
          const auto x = RandomActivations(rng, m * k);
          const auto ys = RunMatMul(p, x.data(), m, nullptr, Isa::kScalar);
          for (ThreadPool* pl : {static_cast<ThreadPool*>(nullptr), &pool}) {
            std::vector<float> ya(static_cast<size_t>(m * rows), -777.0f);
            const WeightView* ws[1] = {&wv};
            float* yp[1] = {ya.data()};
            MatMulWith(kern, ws, 1, x.data(), m, yp, pl, kern.isa);
            EXPECT_TRUE(SameBits(ys.data(), ya.data(), m * rows))
                << kern.name << " " << DTypeName(t) << " k=" << k << " rows=" << rows << " m=" << m
                << " first diff at " << testing::FirstDiff(ys.data(), ya.data(), m * rows);
            if (::testing::Test::HasFailure()) return rows_tested;
          }
        }
      }
    }
  }
  return rows_tested;
}

TEST_P(MatMulTest, EveryKernelRowEqualsScalar) {
  const DType t = GetParam();
  std::mt19937 rng(4242 + static_cast<int>(t));
  const int64_t row_counts[] = {1, 15, 16, 17, 40};
  // 70: past a 64-row chunk of the AVX2 unpacked batch walk (packed_rows_avx2.h).
  const int64_t ms[] = {1, 2, 3, 4, 5, 8, 11, 16, 17, 35, 70};
  const int rows_tested = ExpectEveryRowEqualsScalar(t, rng, Lengths(t), row_counts, ms);
  if (testing::AvailableIsas().size() > 1) {
    EXPECT_GT(rows_tested, 0) << "no SIMD row for the type";
  }
}

// A batch long enough at k = 8192 to cross the chunks the AVX2 packed walks take
// (packed_rows_avx2.h, BatchChunkRows: 64 rows at that k).
TEST_P(MatMulTest, EveryKernelRowEqualsScalarPastABatchChunk) {
  const DType t = GetParam();
  std::mt19937 rng(4343 + static_cast<int>(t));
  const int64_t ks[] = {8192}, row_counts[] = {17}, ms[] = {70, 131};
  ExpectEveryRowEqualsScalar(t, rng, ks, row_counts, ms);
}

TEST(MatMulPacked, OnlySomeTypesHaveAPackedLayout) {
  for (DType t :
       {DType::kF32, DType::kQ5_K, DType::kIQ4_NL, DType::kQ2_K, DType::kQ3_K, DType::kIQ4_XS}) {
    WeightView w{t, 16, 256, nullptr, RowBytes(t, 256)};
    EXPECT_EQ(PackedBytes(w), 0) << DTypeName(t);
  }
  // f16/bf16: 8-row groups, only when every row is whole 8-element chunks.
  EXPECT_EQ(PackedBytes(WeightView{DType::kF16, 17, 64, nullptr, RowBytes(DType::kF16, 64)}),
            3 * 8 * 64 * 2);
  EXPECT_EQ(PackedBytes(WeightView{DType::kBF16, 16, 63, nullptr, RowBytes(DType::kBF16, 63)}), 0);
  WeightView w{DType::kQ4_1, 17, 64, nullptr, RowBytes(DType::kQ4_1, 64)};
  EXPECT_EQ(PackedBytes(w), 2 * 2 * 320);  // 2 groups of 16 rows x 2 blocks x 320 bytes
  // q5_0 packs to exactly its blocks' size (16 rows x 22 bytes per block).
  WeightView w5{DType::kQ5_0, 16, 64, nullptr, RowBytes(DType::kQ5_0, 64)};
  EXPECT_EQ(PackedBytes(w5), 16 * RowBytes(DType::kQ5_0, 64));
  // q6_k packs to exactly its blocks' size (16 rows x 210 bytes per superblock).
  WeightView w6{DType::kQ6_K, 16, 512, nullptr, RowBytes(DType::kQ6_K, 512)};
  EXPECT_EQ(PackedBytes(w6), 16 * RowBytes(DType::kQ6_K, 512));
}

// Activations outside the usual range still give equal bits: huge blocks, a
// block of subnormals only (1/d overflows; q clamps to +-127), zeros, nan. On
// every SIMD path the CPU has (AVX2, AVX-512, NEON).
TEST_P(MatMulTest, SimdEqualsScalarOnExtremeActivations) {
  if (testing::AvailableIsas().size() < 2) GTEST_SKIP() << "CPU has no SIMD kernel path";
  const DType t = GetParam();
  std::mt19937 rng(555 + static_cast<int>(t));
  const int64_t k = IsKQuant(t) ? 1024 : 320, m = 3, rows = 7;
  const Problem p = MakeProblem(rng, t, rows, k);
  auto x = RandomActivations(rng, m * k);
  for (int64_t j = 0; j < 32; ++j) x[j] *= 1e30f;
  for (int64_t j = 256; j < 512; ++j) x[j] = (j % 3 == 0) ? 0.0f : (j % 2 ? 1e-40f : -3e-41f);
  x[k + 5] = std::nanf("");
  const auto ys = RunMatMul(p, x.data(), m, nullptr, Isa::kScalar);
  for (Isa isa : testing::AvailableIsas()) {
    const auto ya = RunMatMul(p, x.data(), m, nullptr, isa);
    for (int64_t i = 0; i < m * rows; ++i) {
      // nan compares by bits too: both paths must produce the same nan.
      ASSERT_EQ(FloatBits(ys[i]), FloatBits(ya[i]))
          << DTypeName(t) << " isa=" << IsaName(isa) << " output " << i;
    }
  }
}

// A model whose block scales (float types: weights) are inf or nan is the model's
// problem: every path still finishes, and the outputs those blocks reach are
// non-finite on every path alike.
TEST_P(MatMulTest, NonFiniteScalesAreNotACrash) {
  const DType t = GetParam();
  const auto offsets = testing::ScaleOffsets(t);
  std::mt19937 rng(77 + static_cast<int>(t));
  const int64_t k = IsKQuant(t) ? 512 : 96, m = 3, rows = 6;
  Problem p = MakeProblem(rng, t, rows, k);
  const auto traits = *GetDTypeTraits(static_cast<uint32_t>(t));
  const uint16_t bad[] = {0x7c00, 0xfc00, 0x7e00, 0x7c01};       // f16 +inf, -inf, qnan, snan
  const uint16_t bad_bf16[] = {0x7f80, 0xff80, 0x7fc0, 0x7f81};  // the same in bf16
  const float bad_f32[] = {INFINITY, -INFINITY, std::nanf(""), std::nanf("1")};
  for (int64_t r = 0; r < rows; r += 2) {  // rows 1, 3, 5 stay finite
    uint8_t* row = p.w.data() + r * RowBytes(t, k);
    const int64_t e = 17 * (r / 2) + 3;  // one weight of the row (float types)
    if (t == DType::kF32) {
      std::memcpy(row + 4 * e, &bad_f32[r / 2], 4);
    } else if (t == DType::kF16) {
      testing::PutHalf(row + 2 * e, bad[r / 2]);
    } else if (t == DType::kBF16) {
      testing::PutHalf(row + 2 * e, bad_bf16[r / 2]);
    } else {
      ASSERT_FALSE(offsets.empty()) << "no block scales known for " << DTypeName(t);
      const int64_t blk = (r / 2) % (k / traits.block_elems);
      testing::PutHalf(row + blk * traits.block_bytes + offsets[r / 2 % offsets.size()],
                       bad[r / 2]);
    }
  }
  const auto x = RandomActivations(rng, m * k);
  const auto ys = RunMatMul(p, x.data(), m, nullptr, Isa::kScalar);
  for (Isa isa : testing::AvailableIsas()) {
    const auto ya = RunMatMul(p, x.data(), m, nullptr, isa);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t r = 0; r < rows; ++r) {
        const float a = ys[i * rows + r], b = ya[i * rows + r];
        EXPECT_EQ(std::isfinite(a), r % 2 == 1) << DTypeName(t) << " row " << r << " = " << a;
        EXPECT_EQ(std::isnan(a), std::isnan(b)) << DTypeName(t) << " " << IsaName(isa);
        if (std::isfinite(a)) {
          EXPECT_EQ(FloatBits(a), FloatBits(b)) << IsaName(isa);
        }
      }
    }
  }
}

TEST_P(MatMulTest, BatchInvariance) {
  const DType t = GetParam();
  std::mt19937 rng(99 + static_cast<int>(t));
  const int64_t k = IsFloat(t) ? 203 : IsKQuant(t) ? 2304 : 352;
  const int64_t rows = 37;
  const Problem p = MakeProblem(rng, t, rows, k);
  const int64_t pool_rows = 40;
  const auto pool_x = RandomActivations(rng, pool_rows * k);
  for (Isa isa : testing::AvailableIsas()) {
    std::vector<std::vector<float>> solo(pool_rows);
    for (int64_t r = 0; r < pool_rows; ++r)
      solo[r] = RunMatMul(p, pool_x.data() + r * k, 1, nullptr, isa);
    std::uniform_int_distribution<int64_t> pick(0, pool_rows - 1), shift(0, 7);
    for (int64_t m = 1; m <= 17; ++m) {
      // The batch sits at a random (mis)alignment; its rows are random pool rows.
      const int64_t off = shift(rng);
      std::vector<float> buf(static_cast<size_t>(off + m * k));
      std::vector<int64_t> which(static_cast<size_t>(m));
      for (int64_t i = 0; i < m; ++i) {
        which[i] = pick(rng);
        std::copy_n(pool_x.data() + which[i] * k, k, buf.data() + off + i * k);
      }
      const auto y = RunMatMul(p, buf.data() + off, m, nullptr, isa);
      for (int64_t i = 0; i < m; ++i) {
        ASSERT_TRUE(SameBits(y.data() + i * rows, solo[which[i]].data(), rows))
            << DTypeName(t) << " isa=" << IsaName(isa) << " m=" << m << " row " << i;
      }
    }
  }
}

// MatMulGroup (q/k/v and gate/up in one call) gives each matrix exactly its
// own MatMul's bits, on every path and pool size, with row counts that split
// the 16-row units unevenly, packed weights included.
TEST_P(MatMulTest, GroupEqualsSeparateCalls) {
  const DType t = GetParam();
  std::mt19937 rng(31 + static_cast<int>(t));
  const int64_t k = IsFloat(t) ? 72 : IsKQuant(t) ? 512 : 96;
  std::vector<Problem> ps;
  for (int64_t rows : {37, 16, 5}) ps.push_back(MakeProblem(rng, t, rows, k));
  std::vector<std::vector<uint8_t>> packed(ps.size());
  std::vector<WeightView> views;
  for (size_t j = 0; j < ps.size(); ++j) {
    views.push_back(ps[j].view());
    const int64_t bytes = PackedBytes(views[j]);
    if (bytes > 0 && CpuHasAvx512()) {
      packed[j].resize(static_cast<size_t>(bytes));
      PackWeights(views[j], packed[j].data());
      views[j].packed = packed[j].data();
    }
  }
  ThreadPool pool(3);
  for (Isa isa : testing::AvailableIsas()) {
    for (ThreadPool* pl : {static_cast<ThreadPool*>(nullptr), &pool}) {
      for (int64_t m : {1, 3, 9, 20}) {
        const auto x = RandomActivations(rng, m * k);
        std::vector<std::vector<float>> got(ps.size());
        const WeightView* ws[3];
        float* ys[3];
        for (size_t j = 0; j < ps.size(); ++j) {
          got[j].assign(static_cast<size_t>(m * ps[j].rows), -777.0f);
          ws[j] = &views[j];
          ys[j] = got[j].data();
        }
        MatMulGroup(ws, 3, x.data(), m, ys, pl, isa);
        for (size_t j = 0; j < ps.size(); ++j) {
          const auto want = RunMatMul(ps[j], x.data(), m, nullptr, Isa::kScalar);
          ASSERT_TRUE(SameBits(want.data(), got[j].data(), m * ps[j].rows))
              << DTypeName(t) << " isa=" << IsaName(isa) << " m=" << m << " matrix " << j
              << (pl ? " pool" : " no pool");
        }
      }
    }
  }
}

// Matrices of different types in one group (a q6_k attn_v among q4_k, say)
// are computed one call each, with the same bits.
TEST(MatMulGroupMixed, DifferentTypesFallBackToSeparateCalls) {
  std::mt19937 rng(32);
  const int64_t k = 512, m = 3;
  const Problem a = MakeProblem(rng, DType::kQ4_K, 20, k), b = MakeProblem(rng, DType::kQ6_K, 7, k);
  const WeightView va = a.view(), vb = b.view();
  const auto x = RandomActivations(rng, m * k);
  ThreadPool pool(2);
  for (Isa isa : testing::AvailableIsas()) {
    std::vector<float> ya(static_cast<size_t>(m * a.rows)), yb(static_cast<size_t>(m * b.rows));
    const WeightView* ws[2] = {&va, &vb};
    float* ys[2] = {ya.data(), yb.data()};
    MatMulGroup(ws, 2, x.data(), m, ys, &pool, isa);
    const auto wa = RunMatMul(a, x.data(), m, nullptr, Isa::kScalar);
    const auto wb = RunMatMul(b, x.data(), m, nullptr, Isa::kScalar);
    EXPECT_TRUE(SameBits(wa.data(), ya.data(), m * a.rows)) << IsaName(isa);
    EXPECT_TRUE(SameBits(wb.data(), yb.data(), m * b.rows)) << IsaName(isa);
  }
}

TEST_P(MatMulTest, ThreadInvariance) {
  const DType t = GetParam();
  std::mt19937 rng(7 + static_cast<int>(t));
  const int64_t k = IsFloat(t) ? 130 : IsKQuant(t) ? 512 : 288;
  const int64_t rows = 101;
  const Problem p = MakeProblem(rng, t, rows, k);
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int n = 1; n <= 4; ++n) pools.push_back(std::make_unique<ThreadPool>(n));
  for (Isa isa : testing::AvailableIsas()) {
    for (int64_t m : {1, 3, 8}) {
      const auto x = RandomActivations(rng, m * k);
      const auto base = RunMatMul(p, x.data(), m, nullptr, isa);
      for (auto& pool : pools) {
        const auto y = RunMatMul(p, x.data(), m, pool.get(), isa);
        ASSERT_TRUE(SameBits(base.data(), y.data(), m * rows))
            << DTypeName(t) << " isa=" << IsaName(isa) << " threads=" << pool->size() << " m=" << m;
      }
    }
  }
}

// float64 on exactly what the kernel multiplies: the dequantized weights, and
// for quant types the quantized activations d_b * q_i. The bound is
// gamma(n) * S: n counts the roundings any term sees (products, the fmas of its
// lane, float(isum), the tree, the one rounding inside DequantizeRow), and S
// sums |terms| with the additive min part counted separately (q4_1, q4_k,
// q5_k split each weight into d*q and min, which may cancel).
TEST_P(MatMulTest, AccuracyAgainstFloat64) {
  const DType t = GetParam();
  std::mt19937 rng(4242 + static_cast<int>(t));
  std::vector<uint8_t> storage;
  for (int64_t k : Lengths(t)) {
    const int64_t rows = 6, m = 3;
    const Problem p = MakeProblem(rng, t, rows, k);
    const auto x = RandomActivations(rng, m * k);
    std::vector<double> xq(static_cast<size_t>(m * k));
    int64_t terms_per_lane;
    if (IsFloat(t)) {
      std::copy(x.begin(), x.end(), xq.begin());
      terms_per_lane = (k + 7) / 8;
    } else if (IsKQuant(t)) {
      ActQ8K a;
      PrepareActQ8K(m, k, &storage, &a);
      ref::QuantizeActQ8K(x.data(), &a);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j)
          xq[i * k + j] = static_cast<double>(a.d[i * a.nsb + j / kQKK]) * a.qs[i * k + j];
      terms_per_lane = 2 * ((a.nsb + 7) / 8);
    } else {
      ActQ8 a;
      PrepareActQ8(m, k, &storage, &a);
      ref::QuantizeActQ8(x.data(), &a);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j)
          xq[i * k + j] =
              static_cast<double>(a.d[i * a.nb_pad + j / kQK]) * a.qs[i * a.nb_pad * kQK + j];
      terms_per_lane = 2 * ((a.nb + 7) / 8);
    }
    const double gamma = testing::Gamma(static_cast<double>(terms_per_lane + 8));
    for (Isa isa : testing::AvailableIsas()) {
      const auto y = RunMatMul(p, x.data(), m, nullptr, isa);
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* row = p.w.data() + r * RowBytes(t, k);
        const auto w = testing::Dequantize(t, row, k);
        const auto zq = testing::ZeroQuants(t, row, k);
        const auto mins =
            zq.empty() ? std::vector<float>(k, 0.0f) : testing::Dequantize(t, zq.data(), k);
        for (int64_t i = 0; i < m; ++i) {
          double exact = 0, s = 0;
          for (int64_t j = 0; j < k; ++j) {
            exact += static_cast<double>(w[j]) * xq[i * k + j];
            s += (std::fabs(w[j]) + 2.0 * std::fabs(mins[j])) * std::fabs(xq[i * k + j]);
          }
          const double got = y[i * rows + r];
          EXPECT_LE(std::fabs(got - exact), gamma * s)
              << DTypeName(t) << " isa=" << IsaName(isa) << " k=" << k << " r=" << r << " i=" << i
              << " got " << got << " exact " << exact;
        }
      }
    }
  }
}

// The f32 path is the canonical 8-lane sum: each output equals Dot(w_r, x_i).
TEST(MatMulOrder, F32EqualsDot) {
  std::mt19937 rng(5);
  for (int64_t k : {1, 5, 8, 13, 64, 99}) {
    const Problem p = MakeProblem(rng, DType::kF32, 5, k);
    const auto x = RandomActivations(rng, 2 * k);
    for (Isa isa : testing::AvailableIsas()) {
      const auto y = RunMatMul(p, x.data(), 2, nullptr, isa);
      for (int64_t i = 0; i < 2; ++i) {
        for (int64_t r = 0; r < 5; ++r) {
          const float* wr = reinterpret_cast<const float*>(p.w.data()) + r * k;
          const float d = Dot(wr, x.data() + i * k, k, Isa::kScalar);
          EXPECT_EQ(FloatBits(d), FloatBits(y[i * 5 + r])) << "k=" << k;
        }
      }
    }
  }
}

// q8_0, q4_0, q5_0 and iq4_nl against the documented order, emulated here from the
// dequantized weights (exact for these types: w = d * integer): isum_b to lane b % 8
// as fma(dw*dx, float(isum), lane), then the lane tree.
TEST(MatMulOrder, SymmetricBlockTypesFollowTheDocumentedOrder) {
  std::mt19937 rng(6);
  std::vector<uint8_t> storage;
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ5_0, DType::kIQ4_NL}) {
    for (int64_t k : {32, 288, 576}) {
      const Problem p = MakeProblem(rng, t, 3, k);
      const auto x = RandomActivations(rng, k);
      ActQ8 a;
      PrepareActQ8(1, k, &storage, &a);
      ref::QuantizeActQ8(x.data(), &a);
      const auto y = RunMatMul(p, x.data(), 1, nullptr, Isa::kScalar);
      for (int64_t r = 0; r < 3; ++r) {
        const uint8_t* row = p.w.data() + r * RowBytes(t, k);
        const auto w = testing::Dequantize(t, row, k);
        const size_t bsize = static_cast<size_t>(RowBytes(t, kQK));
        float lanes[8] = {};
        for (int64_t b = 0; b < k / 32; ++b) {
          uint16_t dh;
          std::memcpy(&dh, row + b * bsize, 2);
          const float dw = F16ToF32(dh);
          int32_t isum = 0;
          for (int j = 0; j < 32; ++j) {
            const float q = dw == 0.0f ? 0.0f : w[b * 32 + j] / dw;
            isum += static_cast<int32_t>(q) * a.qs[b * 32 + j];
          }
          if (dw == 0.0f) isum = 0;
          lanes[b % 8] = std::fma(dw * a.d[b], static_cast<float>(isum), lanes[b % 8]);
        }
        const float expect = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) +
                             ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
        EXPECT_EQ(FloatBits(expect), FloatBits(y[r])) << DTypeName(t) << " k=" << k;
      }
    }
  }
}

TEST(MatMulEdge, EmptyBatchWritesNothing) {
  std::mt19937 rng(8);
  const Problem p = MakeProblem(rng, DType::kQ4_1, 4, 64);
  float y = 123.0f;
  MatMul(p.view(), nullptr, 0, &y, nullptr, Isa::kScalar);
  EXPECT_EQ(y, 123.0f);
}

std::string TypeName(const ::testing::TestParamInfo<DType>& info) { return DTypeName(info.param); }

// Every type the table in numerics/dtype.cc computes with: a new row is tested here by
// construction.
INSTANTIATE_TEST_SUITE_P(AllWeightTypes, MatMulTest, ::testing::ValuesIn(ComputableDTypes()),
                         TypeName);

}  // namespace
}  // namespace stet::kernels
