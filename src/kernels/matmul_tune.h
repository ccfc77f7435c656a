// Kernel choice by measurement: for each (weight type, row class) of a model's
// matrices, the rows of the kernel table that can serve it (the scalar row only
// where nothing else can) are timed on those very matrices, interleaved, and the
// fastest goes into the plan Isa::kAuto dispatches from. Every row equals the
// scalar reference bit for bit (tests/kernels), so the choice — noisy or not —
// changes which path runs, never an output.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/matmul_table.h"

namespace stet {
class ThreadPool;
}

namespace stet::kernels {

struct TuneOptions {
  ThreadPool* pool = nullptr;  // the pool the model runs on (null: one thread)
  // Decode and small batches stream their weights from memory: each timed pass
  // reads at least this much, the next pass other matrices of the type.
  int64_t stream_bytes = int64_t{24} << 20;
  // Batch and prefill are compute-bound: a pass multiplies matrices up to this much.
  int64_t prefill_bytes = int64_t{2} << 20;
  // The row count timed for the small class (2-15): 2, single-stream decode in the
  // default (invariant) mode, whose matmuls run x and its int8 residual as two rows.
  int small_rows = 2;
  int batch_rows = 32;     // and for batch (16-63)
  int prefill_rows = 128;  // and for prefill (64+)
  int reps = 5;            // timed passes per candidate after a warm-up (the fastest counts)
};

struct TuneEntry {
  DType type;
  RowClass row_class;
  std::vector<std::pair<const MatMulKernel*, double>> us;  // candidate, fastest pass in us
  const MatMulKernel* chosen = nullptr;
};

struct TuneResult {
  MatMulPlan plan;
  std::vector<TuneEntry> entries;
  double ms = 0;  // wall time of the whole measurement
};

// Measures the candidates for every (type, class) of `mats` (a model's matrices,
// packed copies attached where the model has them).
TuneResult TuneMatMulPlan(std::span<const WeightView* const> mats, const TuneOptions& o);

// One line per measured (type, class): "q4_1 decode: avx2.packed 812 us, avx512.packed
// 790 us <- chosen".
std::string DescribeTuning(const TuneResult& r);

}  // namespace stet::kernels
