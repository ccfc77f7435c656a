// Scalar reference StoreRow (the KV cache writer, rule R3). Numerics: f32 copy,
// or f16 round-to-nearest-even via F32ToF16 (== F16C's conversion); elementwise
// (store_row_test.cc).
#include <cstring>

#include "base/check.h"
#include "kernels/internal.h"
#include "numerics/half.h"

namespace stet::kernels::ref {

void StoreRow(const float* x, int64_t n, DType dst_type, void* dst) {
  switch (dst_type) {
    case DType::kF32:
      if (n > 0) std::memmove(dst, x, static_cast<size_t>(n) * 4);
      break;
    case DType::kF16: {
      auto* h = static_cast<uint8_t*>(dst);
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t v = F32ToF16(x[i]);
        std::memcpy(h + 2 * i, &v, 2);
      }
      break;
    }
    default:
      STET_CHECK_MSG(false, "StoreRow: the KV cache stores f32 or f16");
  }
}

}  // namespace stet::kernels::ref
