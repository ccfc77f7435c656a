// AVX2 Argmax: kernels/argmax_simd.h on 8-lane vectors, four accumulators.
// Equal to ref/argmax.cc's serial strict-> loop (argmax_test.cc).
#include <immintrin.h>

#include "kernels/argmax_simd.h"
#include "kernels/x86/avx2_util.h"

namespace stet::kernels::avx2 {

namespace {

struct V8 : F32x8 {
  static constexpr int kAcc = 4;
  // _mm256_max_ps(a, b) returns b when either is NaN: acc is never NaN.
  static Vec MaxKeep(Vec x, Vec acc) { return _mm256_max_ps(x, acc); }
  static int FirstEqual(Vec x, Vec m) {
    const int eq = _mm256_movemask_ps(_mm256_cmp_ps(x, m, _CMP_EQ_OQ));
    return eq != 0 ? __builtin_ctz(static_cast<unsigned>(eq)) : -1;
  }
};

}  // namespace

int64_t Argmax(const float* x, int64_t n) { return ArgmaxSimd<V8>::Argmax(x, n); }

}  // namespace stet::kernels::avx2
