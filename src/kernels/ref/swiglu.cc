// Scalar reference SwiGlu. Numerics: elementwise out = SiluF(gate) * up with
// stet's own SiluF (rule R5); no reduction (swiglu_test.cc).
#include "kernels/internal.h"
#include "numerics/math.h"

namespace stet::kernels::ref {

void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = SiluF(gate[i]) * up[i];
}

}  // namespace stet::kernels::ref
