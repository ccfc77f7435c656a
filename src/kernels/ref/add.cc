// Scalar reference Add. Numerics: elementwise a + b, one rounding; no
// reduction (add_test.cc).
#include "kernels/internal.h"

namespace stet::kernels::ref {

void Add(const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace stet::kernels::ref
