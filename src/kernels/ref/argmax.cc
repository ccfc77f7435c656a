// Scalar reference Argmax: the first index of the largest value (strict >, so
// ties keep the lower index; rule R7). A NaN never wins, and a NaN at index 0
// is never beaten (every comparison with it is false) (argmax_test.cc).
#include "kernels/internal.h"

namespace stet::kernels::ref {

int64_t Argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}

}  // namespace stet::kernels::ref
