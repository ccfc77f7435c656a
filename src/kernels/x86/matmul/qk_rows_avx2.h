// The row loop of the unpacked AVX2 superblock kernels (matmul_qk_avx2.cc,
// matmul_qk_lowbit_avx2.cc), shared: per weight row, each superblock is unpacked
// once (kUnpack) and used for RM activation rows; kAccumulate adds superblock b's
// exact integer sums into logical lane b % 8 of a row with the reference's fmas
// (ref/matmul_qk.cc), then the fixed lane tree. Only include from files compiled
// with the AVX2 flags.
#pragma once

#include <cstdint>

#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"

namespace stet::kernels::avx2 {

// Superblocks ahead of the one unpacked that the first tile of a row prefetches.
constexpr int64_t kRowAhead = 4;

template <typename Block, typename U, void (*kUnpack)(const Block&, U*),
          void (*kAccumulate)(const U&, const int8_t*, const int16_t*, float, float*), int RM>
void UnpackedRowTile(const MatMulArgs& a, const Block* row, int64_t r, int64_t i0) {
  const ActQ8K& act = *a.a8k;
  float lanes[RM][kLanes] = {};
  for (int64_t b = 0; b < act.nsb; ++b) {
    // The first tile of a row streams it from memory (rows are contiguous, so
    // past the row's end this is the next row's start; a prefetch never faults).
    if (i0 == 0)
      PrefetchLines(reinterpret_cast<const uint8_t*>(row + b + kRowAhead), sizeof(Block));
    U u;
    kUnpack(row[b], &u);
    STET_UNROLL
    for (int i = 0; i < RM; ++i) {
      const int64_t sb = (i0 + i) * act.nsb + b;
      kAccumulate(u, act.qs + (i0 + i) * act.k + b * kQKK, act.bsums + sb * 16, act.d[sb],
                  &lanes[i][b % kLanes]);
    }
  }
  STET_UNROLL
  for (int i = 0; i < RM; ++i) a.y[(i0 + i) * a.w->rows + r] = CombineLanes(lanes[i]);
}

// The last `rest` (1..RM) activation rows of a weight row as one tile, so each
// superblock is unpacked once for them too (decode in the default mode is 2 rows).
template <typename Block, typename U, void (*kUnpack)(const Block&, U*),
          void (*kAccumulate)(const U&, const int8_t*, const int16_t*, float, float*), int RM>
void UnpackedTailTile(const MatMulArgs& a, const Block* row, int64_t r, int64_t i0, int64_t rest) {
  if constexpr (RM > 1) {
    if (rest < RM)
      return UnpackedTailTile<Block, U, kUnpack, kAccumulate, RM - 1>(a, row, r, i0, rest);
  }
  UnpackedRowTile<Block, U, kUnpack, kAccumulate, RM>(a, row, r, i0);
}

// Weight rows [r0, r1), every activation row: kRM rows per unpacked superblock (prefill),
// the rest as one smaller tile.
template <typename Block, typename U, void (*kUnpack)(const Block&, U*),
          void (*kAccumulate)(const U&, const int8_t*, const int16_t*, float, float*), int kRM = 4>
void UnpackedRows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  const WeightView& w = *a.w;
  for (int64_t r = r0; r < r1; ++r) {
    const auto* row =
        reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w.data) + r * w.row_bytes);
    int64_t i = 0;
    for (; i + kRM <= a.m; i += kRM) {
      UnpackedRowTile<Block, U, kUnpack, kAccumulate, kRM>(a, row, r, i);
    }
    if constexpr (kRM > 1) {
      if (i < a.m) UnpackedTailTile<Block, U, kUnpack, kAccumulate, kRM - 1>(a, row, r, i, a.m - i);
    }
  }
}

}  // namespace stet::kernels::avx2
