// Software prefetch of K/V rows a fixed number of positions ahead of the rows
// attention is reading, run by run through the block table (kv_rows.h), into
// L2. A long context comes from memory (the weights stream through the caches
// between layers); a prefetch never changes a value. Measured on a Zen 4,
// 4096 positions read from DRAM: a head_dim-256 f16 pair 422 -> 282 us, four
// queries' scores 349 -> 157 us, head_dim 128 (256-byte rows) 100 -> 56 us;
// into L1 (T0) it did half as well, and 128-byte rows (head_dim 64) were 10-20%
// slower with any prefetch (the hardware prefetcher keeps up), so rows under
// kPrefetchMinRowBytes go without. Used by the AVX-512 attention kernels, the
// AVX2 pair and steps, and (512-byte rows only) the AVX2 blocked multi-query pass.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/kv_rows.h"

namespace stet::kernels::x86 {

constexpr int64_t kAheadRows = 32, kPrefetchMinRowBytes = 256;

class KvPrefetcher {
 public:
  // Rows of positions [begin, n) of `rows`, row_bytes each; of each, the bytes
  // [offset, offset + bytes) (bytes < 0: to the row's end).
  KvPrefetcher(const KvRows& rows, int64_t n, int64_t row_bytes, int64_t begin = 0,
               int64_t offset = 0, int64_t bytes = -1)
      : rows_(rows.Offset(offset)),
        n_(row_bytes >= kPrefetchMinRowBytes ? n : 0),
        bytes_(bytes < 0 ? row_bytes - offset : bytes),
        next_(begin) {}
  // Prefetches the rows of positions below `end` not prefetched yet.
  void Upto(int64_t end) {
    end = std::min(end, n_);
    for (; next_ < end; ++next_, --left_, row_ += rows_.row_stride) {
      if (left_ == 0) row_ = rows_.RunAt(next_, n_, &left_);
      for (int64_t b = 0; b < bytes_; b += 64) _mm_prefetch(row_ + b, _MM_HINT_T1);
    }
  }

 private:
  KvRows rows_;
  int64_t n_, bytes_, next_, left_ = 0;
  const uint8_t* row_ = nullptr;
};

}  // namespace stet::kernels::x86
