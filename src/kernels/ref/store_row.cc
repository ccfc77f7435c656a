// Scalar reference StoreRow (the KV cache writer, rule R3). Numerics: f32 copy,
// or f16 round-to-nearest-even via F32ToF16 (== F16C's conversion); elementwise
// (store_row_test.cc).
#include <cstring>

#include "base/check.h"
#include "kernels/internal.h"
#include "numerics/half.h"

namespace stet::kernels::ref {

void StoreRow(const float* x, int64_t n, DType dst_type, void* dst) {
  StoreRowWith(x, n, dst_type, dst, [](const float*, int64_t, uint8_t*) { return int64_t{0}; });
}

}  // namespace stet::kernels::ref
