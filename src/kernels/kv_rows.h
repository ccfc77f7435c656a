// Where attention finds the K (or V) rows of one KV head, read in place: a
// paged cache's block table (no copy), or one contiguous run. Positions are
// visited in increasing order whatever the layout, so the layout never reaches
// a value (tests/kernels/attend_head_test.cc: PagedEqualsContiguous).
#pragma once

#include <cstdint>

namespace stet::kernels {

// Attention position t is stored position first + t (first > 0: a sliding
// window's start, read in place). Stored position p lies in block p / block_rows
// at row p % block_rows; block b's row 0 is at base + blocks[b] * block_rows *
// row_stride, and its rows are row_stride bytes apart. blocks == nullptr: one
// run, stored position p at base + p * row_stride.
struct KvRows {
  const uint8_t* base = nullptr;
  int64_t row_stride = 0;           // bytes between consecutive positions of a run
  const int32_t* blocks = nullptr;  // block table, or nullptr (contiguous)
  int64_t block_rows = 0;           // positions per block (with blocks)
  int64_t first = 0;                // stored position of attention position 0

  // Attention position t's row, and in *len how many positions from t on
  // (at most n - t) follow it contiguously, row_stride apart.
  const uint8_t* RunAt(int64_t t, int64_t n, int64_t* len) const {
    const int64_t p = first + t;
    if (blocks == nullptr) {
      *len = n - t;
      return base + p * row_stride;
    }
    const int64_t in = p % block_rows, left = block_rows - in;
    *len = left < n - t ? left : n - t;
    return base + (blocks[p / block_rows] * block_rows + in) * row_stride;
  }
  // Position t's row (the scalar reference and tests; the SIMD paths walk runs).
  const uint8_t* Row(int64_t t) const {
    int64_t len;
    return RunAt(t, t + 1, &len);
  }
  // The same view moved by `bytes` inside each row (e.g. to KV head h).
  KvRows Offset(int64_t bytes) const {
    KvRows r = *this;
    r.base += bytes;
    return r;
  }
  // The view whose position 0 is this one's position `start`.
  KvRows From(int64_t start) const {
    KvRows r = *this;
    r.first += start;
    return r;
  }
};

}  // namespace stet::kernels
