// Scalar reference Dot. Numerics: the canonical 8-lane sum (element k -> lane
// k%8, lane = fma(a_k, b_k, lane) in increasing k, fixed lane tree); depends on
// n only (dot_test.cc).
#include <cmath>

#include "kernels/internal.h"

namespace stet::kernels::ref {

float Dot(const float* a, const float* b, int64_t n) {
  float lanes[kLanes] = {};
  for (int64_t k = 0; k < n; ++k) lanes[k % kLanes] = std::fma(a[k], b[k], lanes[k % kLanes]);
  return CombineLanes(lanes);
}

}  // namespace stet::kernels::ref
