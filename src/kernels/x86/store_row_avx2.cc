// AVX2 StoreRow (the KV cache writer, rule R3). Numerics: f32 copy, or F16C
// round-to-nearest-even, which equals F32ToF16 for every input incl. nan/inf/
// subnormals (store_row_test.cc); elementwise.
#include <immintrin.h>

#include <cstring>

#include "base/check.h"
#include "kernels/internal.h"
#include "numerics/half.h"

namespace stet::kernels::avx2 {

void StoreRow(const float* x, int64_t n, DType dst_type, void* dst) {
  StoreRowWith(x, n, dst_type, dst, [](const float* xs, int64_t len, uint8_t* h) {
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
      const __m128i v = _mm256_cvtps_ph(_mm256_loadu_ps(xs + i), _MM_FROUND_TO_NEAREST_INT);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 2 * i), v);
    }
    return i;
  });
}

}  // namespace stet::kernels::avx2
