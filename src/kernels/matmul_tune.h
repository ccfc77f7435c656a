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
  // reads at least this much (more than a last-level cache holds: every candidate
  // of a pass reads the same matrices), the next pass other matrices of the type.
  int64_t stream_bytes = int64_t{48} << 20;
  // ... in calls of at most this much: a large vocabulary's output matrix is cut,
  // a layer's matrices stay whole, as the model calls them. (Cut in 4 MiB thirds,
  // the 1B's 9 MiB q4_k matrices streamed best on avx2.packed in 6 of 6 loads, 4-11%
  // ahead of avx512.packed, which the model's own decode runs faster; whole, 2 of 4.)
  int64_t stream_slice_bytes = int64_t{16} << 20;
  // Batch and prefill are compute-bound: a pass multiplies matrices up to this much.
  int64_t prefill_bytes = int64_t{2} << 20;
  // The row count timed for the small class (2-15): 2, single-stream decode in the
  // default (invariant) mode, whose matmuls run x and its int8 residual as two rows.
  int small_rows = 2;
  int batch_rows = 32;     // and for batch (16-63)
  int prefill_rows = 128;  // and for prefill (64+)
  int reps = 7;            // timed passes per candidate after a warm-up
  // Streaming rows within this share of the best are tied: the memory bound, not
  // the row, set their time, and a row faster by more than this share on cached
  // weights (`hot_bytes` of them, passed over again) goes in — faster wherever
  // more bandwidth is left (a quieter machine, a host in a faster state). Within
  // the share in cache too, the best stays. 3%, the most `auto` may give up
  // against the best single path: at 10% a Zen 4 took avx512.packed for Gemma 3's
  // q8_0 output (9% slower streaming, 38% faster cached) and its decode ran
  // ~10% below --isa avx2's.
  double tie = 0.03;
  int64_t hot_bytes = int64_t{4} << 20;
};

struct TuneCandidate {
  const MatMulKernel* row = nullptr;
  double us = 0;      // fastest timed pass
  double rel = 0;     // median over passes of its time / the pass's fastest row's
  double hot_us = 0;  // streaming classes: fastest pass over cached weights (else 0)
};

struct TuneEntry {
  DType type;
  RowClass row_class;
  std::vector<TuneCandidate> us;  // every candidate (empty: one row could serve)
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

// times[c][i]: candidate c's time in pass i (the candidates of a pass run back to
// back). Per candidate, the median over passes of its time / that pass's fastest:
// a machine whose memory bandwidth drifts between passes (a shared host) shifts
// every candidate of a pass alike, and the ratio cancels it.
std::vector<double> RelativeTimes(const std::vector<std::vector<double>>& times);

// The row the plan takes: the lowest `rel` (the best); for a streaming class
// (decode, small), of the candidates within `tie` of the best's `rel` whose
// `hot_us` is more than `tie` below the best's, the lowest `hot_us` — else the best.
const MatMulKernel* ChooseTuned(const std::vector<TuneCandidate>& cs, bool streaming, double tie);

// One line per measured (type, class): "q4_1 small: avx2.packed 812 us x1.03 hot 95 us,
// avx512.packed 790 us x1.00 hot 71 us <- chosen".
std::string DescribeTuning(const TuneResult& r);

}  // namespace stet::kernels
