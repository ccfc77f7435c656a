// Kernel choice by measurement (kernels/matmul_tune.h): the paired relative times
// cancel a drift every candidate of a pass shares, a streaming class's tie goes
// to a row clearly faster on cached weights (else it stays with the row that
// streamed best) and nothing outside the tie wins by being fast in cache, and a real measurement
// over a packed q4_k matrix reports what the plan file shows.
#include "kernels/matmul_tune.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "base/cpu_features.h"
#include "kernels/kernels.h"
#include "kernels/matmul_table.h"

namespace stet::kernels {
namespace {

TEST(MatMulTune, RelativeTimesCancelADriftThePassesShare) {
  // Candidate 1 takes 1.25x candidate 0's time in every pass but one, while the
  // machine's speed moves 3x between passes. The fastest passes (80 vs 90) would
  // say 1.125, decided by the one pass where the slower row got lucky; the median
  // of the paired ratios says 1.25.
  const std::vector<std::vector<double>> times = {{100, 300, 200, 80, 150},
                                                  {125, 375, 250, 90, 187.5}};
  const std::vector<double> rel = RelativeTimes(times);
  ASSERT_EQ(rel.size(), 2u);
  EXPECT_DOUBLE_EQ(rel[0], 1.0);
  EXPECT_DOUBLE_EQ(rel[1], 1.25);
}

TEST(MatMulTune, AStreamingTieGoesToTheRowFasterInCache) {
  const MatMulKernel* a = &MatMulKernels()[0];
  const MatMulKernel* b = &MatMulKernels()[1];
  const MatMulKernel* c = &MatMulKernels()[2];
  // a streams fastest; b is within the tie and faster in cache; c is faster still
  // in cache but 30% slower streaming: outside the tie.
  const std::vector<TuneCandidate> cs = {
      {a, 900, 1.00, 100}, {b, 950, 1.06, 70}, {c, 1200, 1.30, 40}};
  EXPECT_EQ(ChooseTuned(cs, /*streaming=*/true, 0.10), b);
  EXPECT_EQ(ChooseTuned(cs, /*streaming=*/true, 0.05), a);
  // Compute-bound classes: the lowest relative time, cache times ignored.
  EXPECT_EQ(ChooseTuned(cs, /*streaming=*/false, 0.10), a);
  EXPECT_EQ(ChooseTuned({}, true, 0.10), nullptr);
  // Within the tie streaming and within it in cache too (two prefetch variants of
  // one kernel, 5% apart by noise): the row that streamed best stays.
  const std::vector<TuneCandidate> near = {{a, 900, 1.00, 100}, {b, 950, 1.06, 95}};
  EXPECT_EQ(ChooseTuned(near, /*streaming=*/true, 0.10), a);
  const std::vector<TuneCandidate> near2 = {{b, 950, 1.06, 95}, {a, 900, 1.00, 100}};
  EXPECT_EQ(ChooseTuned(near2, /*streaming=*/true, 0.10), a);
}

TEST(MatMulTune, AMeasurementReportsEveryCandidate) {
  // 64 x 512 q4_k (2 superblocks per row), random bytes with finite scales: the
  // rows' speed, not their values, is measured.
  WeightView w;
  w.type = DType::kQ4_K;
  w.rows = 64;
  w.cols = 512;
  w.row_bytes = 2 * 144;
  std::vector<uint8_t> data(static_cast<size_t>(w.rows * w.row_bytes));
  uint32_t s = 7;
  for (uint8_t& v : data) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<uint8_t>(s >> 24);
  }
  for (int64_t b = 0; b < w.rows * 2; ++b) data[b * 144 + 1] = data[b * 144 + 3] = 0x30;  // d, dmin
  w.data = data.data();
  std::vector<uint8_t> packed;
  if (PackedBytes(w) > 0) {
    packed.resize(static_cast<size_t>(PackedBytes(w)) + 64);
    void* p = packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
    PackWeights(w, p);
    w.packed = p;
  }
  TuneOptions o;
  o.stream_bytes = o.prefill_bytes = o.hot_bytes = 64 << 10;
  o.reps = 3;
  const WeightView* mats[] = {&w};
  const TuneResult r = TuneMatMulPlan(mats, o);
  ASSERT_EQ(r.entries.size(), static_cast<size_t>(kRowClasses));
  for (const TuneEntry& e : r.entries) {
    SCOPED_TRACE(RowClassName(e.row_class));
    ASSERT_NE(e.chosen, nullptr);
    EXPECT_EQ(r.plan.Get(e.type, e.row_class), e.chosen);
    if (e.us.empty()) continue;  // one row could serve
    const bool streaming = e.row_class == RowClass::kDecode || e.row_class == RowClass::kSmall;
    bool found = false;
    for (const TuneCandidate& c : e.us) {
      found = found || c.row == e.chosen;
      EXPECT_GT(c.us, 0);
      EXPECT_GE(c.rel, 1.0);  // a median of ratios to each pass's fastest
      EXPECT_EQ(c.hot_us > 0, streaming) << c.row->name;
    }
    EXPECT_TRUE(found);
  }
  const std::string text = DescribeTuning(r);
  EXPECT_NE(text.find("q4_k decode:"), std::string::npos) << text;
  // A CPU with one path (an x86 without AVX2: STET_MAX_ISA=scalar) has one row a class.
  const bool choice = std::any_of(r.entries.begin(), r.entries.end(),
                                  [](const TuneEntry& e) { return !e.us.empty(); });
  EXPECT_EQ(choice, CpuHasAvx2Fma() || CpuHasNeon()) << text;
  EXPECT_NE(text.find(choice ? "<- chosen" : "(only row)"), std::string::npos) << text;
}

}  // namespace
}  // namespace stet::kernels
