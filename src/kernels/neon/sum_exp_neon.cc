// NEON SumExpShifted: kernels/sum_exp_simd.h on 4-lane vectors, the exps by
// ExpF4 (lane for lane ExpF's bits). Equal to ref/sum_exp.cc bit for bit
// (sum_exp_test.cc).
#include "kernels/neon/neon_util.h"
#include "kernels/sum_exp_simd.h"
#include "numerics/math_neon.h"

namespace stet::kernels::neon {

namespace {

struct V4 : F32x4 {
  static Vec Exp(Vec y) { return ExpF4(y); }
  // Lanes where !(v < bound), NaN included, as bits.
  static uint32_t LanesNotBelow(Vec v, Vec bound) {
    const uint32x4_t lane_bit = {1, 2, 4, 8};
    return vaddvq_u32(vbicq_u32(lane_bit, vcltq_f32(v, bound)));
  }
  static bool AnyNotBelow(Vec v, Vec bound) { return vminvq_u32(vcltq_f32(v, bound)) == 0; }
};

}  // namespace

float SumExpShifted(const float* x, int64_t n, float shift) {
  return SumExpSimd<V4>::Sum(x, n, shift);
}

}  // namespace stet::kernels::neon
