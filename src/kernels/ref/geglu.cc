// Scalar reference GeGlu (Gemma's gated FFN). Numerics: elementwise out =
// GeluTanhF(gate) * up with stet's own GeluTanhF (rule R5: no libm tanh); no
// reduction, so nothing depends on the batch (geglu_test.cc).
#include "kernels/internal.h"
#include "numerics/math.h"

namespace stet::kernels::ref {

void GeGlu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = GeluTanhF(gate[i]) * up[i];
}

}  // namespace stet::kernels::ref
