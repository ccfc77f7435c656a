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
  switch (dst_type) {
    case DType::kF32:
      if (n > 0) std::memmove(dst, x, static_cast<size_t>(n) * 4);
      break;
    case DType::kF16: {
      auto* h = static_cast<uint8_t*>(dst);
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        const __m128i v = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 2 * i), v);
      }
      for (; i < n; ++i) {
        const uint16_t v = F32ToF16(x[i]);
        std::memcpy(h + 2 * i, &v, 2);
      }
      break;
    }
    default:
      STET_CHECK_MSG(false, "StoreRow: the KV cache stores f32 or f16");
  }
}

}  // namespace stet::kernels::avx2
