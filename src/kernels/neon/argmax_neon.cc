// NEON Argmax: kernels/argmax_simd.h on 4-lane vectors, two accumulators.
// Equal to ref/argmax.cc's serial strict-> loop (argmax_test.cc).
#include "kernels/argmax_simd.h"
#include "kernels/neon/neon_util.h"

namespace stet::kernels::neon {

namespace {

struct V4 : F32x4 {
  static constexpr int kAcc = 2;
  // Select where x > acc: false for a NaN x, so acc (never NaN) stays.
  static Vec MaxKeep(Vec x, Vec acc) { return vbslq_f32(vcgtq_f32(x, acc), x, acc); }
  static int FirstEqual(Vec x, Vec m) {
    if (vmaxvq_u32(vceqq_f32(x, m)) == 0) return -1;
    float l[4];
    vst1q_f32(l, x);
    const float mv = vgetq_lane_f32(m, 0);
    for (int i = 0; i < 4; ++i) {
      if (l[i] == mv) return i;
    }
    return -1;
  }
};

}  // namespace

int64_t Argmax(const float* x, int64_t n) { return ArgmaxSimd<V4>::Argmax(x, n); }

}  // namespace stet::kernels::neon
