// Scalar reference SumExpShifted: s = 0; s += ExpF(x[i] - shift) for i = 0, 1, ...
// One serial sum in index order (the sampler's log-sum-exp; sum_exp_test.cc).
#include "kernels/internal.h"

namespace stet::kernels::ref {

float SumExpShifted(const float* x, int64_t n, float shift) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += ExpF(x[i] - shift);
  return s;
}

}  // namespace stet::kernels::ref
