// NEON Dot: the canonical 8-lane sum (element k -> lane k%8, fma in increasing
// k, fixed lane tree) with lanes 0-3 and 4-7 in two float32x4_t; the tail
// (n % 8 elements) goes to its lanes by scalar fma. Equal to ref/dot.cc bit for
// bit (dot_test.cc).
#include <cmath>

#include "kernels/neon/neon_util.h"

namespace stet::kernels::neon {

float Dot(const float* a, const float* b, int64_t n) {
  Lanes8 acc = ZeroLanes();
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    acc.lo = vfmaq_f32(acc.lo, vld1q_f32(a + k), vld1q_f32(b + k));
    acc.hi = vfmaq_f32(acc.hi, vld1q_f32(a + k + 4), vld1q_f32(b + k + 4));
  }
  if (k == n) return CombineLanes8(acc);
  float lanes[kLanes];
  StoreLanes(acc, lanes);
  for (int64_t j = k; j < n; ++j) lanes[j - k] = std::fma(a[j], b[j], lanes[j - k]);
  return CombineLanes(lanes);
}

}  // namespace stet::kernels::neon
