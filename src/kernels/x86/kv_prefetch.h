// Software prefetch of K/V rows a fixed number of positions ahead of the rows
// attention is reading, run by run through the block table (kv_rows.h). A long
// context comes from memory (the weights stream through the caches between
// layers); a prefetch never changes a value. Only rows of kPrefetchMinRowBytes
// or more are prefetched (head_dim 256 in f16): there, on a Zen 4, a
// 4096-position pair read from DRAM took 340-373 us against 413 us without; on
// 128- and 256-byte rows the hardware prefetcher did better alone (10% slower
// with). Used by the AVX-512 attention kernels; the AVX2 pair kernel measured
// slower with it on the same Zen 4 (536 -> 576-660 us), so it does without.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/kv_rows.h"

namespace stet::kernels::x86 {

constexpr int64_t kAheadRows = 32, kPrefetchMinRowBytes = 512;

class KvPrefetcher {
 public:
  // Rows of positions [0, n) of `rows`, row_bytes each.
  KvPrefetcher(const KvRows& rows, int64_t n, int64_t row_bytes)
      : rows_(rows), n_(row_bytes >= kPrefetchMinRowBytes ? n : 0), row_bytes_(row_bytes) {}
  // Prefetches the rows of positions below `end` not prefetched yet.
  void Upto(int64_t end) {
    end = std::min(end, n_);
    for (; next_ < end; ++next_, --left_, row_ += rows_.row_stride) {
      if (left_ == 0) row_ = rows_.RunAt(next_, n_, &left_);
      for (int64_t b = 0; b < row_bytes_; b += 64) _mm_prefetch(row_ + b, _MM_HINT_T0);
    }
  }

 private:
  const KvRows& rows_;
  int64_t n_, row_bytes_, next_ = 0, left_ = 0;
  const uint8_t* row_ = nullptr;
};

}  // namespace stet::kernels::x86
