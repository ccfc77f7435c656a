// Where attention finds the K (or V) rows of one KV head, read in place: a
// paged cache's block table (no copy), or one contiguous run. Positions are
// visited in increasing order whatever the layout, so the layout never reaches
// a value (tests/kernels/attend_head_test.cc: PagedEqualsContiguous).
#pragma once

#include <cstdint>

namespace stet::kernels {

// Position t lies in block t / block_rows at row t % block_rows; block b's row 0
// is at base + blocks[b] * block_rows * row_stride, and its rows are row_stride
// bytes apart. blocks == nullptr: one run, position t at base + t * row_stride.
struct KvRows {
  const uint8_t* base = nullptr;
  int64_t row_stride = 0;          // bytes between consecutive positions of a run
  const int32_t* blocks = nullptr; // block table, or nullptr (contiguous)
  int64_t block_rows = 0;          // positions per block (with blocks)

  // Rows per run: a run is one block, or everything when contiguous.
  int64_t RunRows(int64_t n) const { return blocks == nullptr ? n : block_rows; }
  // Row 0 of run r (run r holds positions [r * RunRows, ...)).
  const uint8_t* RunBase(int64_t r) const {
    return blocks == nullptr ? base : base + blocks[r] * block_rows * row_stride;
  }
  // Position t's row (the scalar reference and tests; the SIMD paths walk runs).
  const uint8_t* Row(int64_t t) const {
    if (blocks == nullptr) return base + t * row_stride;
    return RunBase(t / block_rows) + (t % block_rows) * row_stride;
  }
  // The same view moved by `bytes` inside each row (e.g. to KV head h).
  KvRows Offset(int64_t bytes) const {
    KvRows r = *this;
    r.base += bytes;
    return r;
  }
};

}  // namespace stet::kernels
