// AVX2 SumExpShifted: kernels/sum_exp_simd.h on 8-lane vectors, the exps by
// ExpF8 (lane for lane ExpF's bits, math_test.cc). With a large vocabulary most
// exps are far below s's last bit, so most of the row costs a subtract and a
// compare and the serial adds are few. On a 262144-logit Gemma 3 row
// (bench/kernels/sampler_bench.cc, a shared Sapphire Rapids VM): 0.24-0.29 ms,
// against 0.41 ms for the same chunks without the skips, 0.72 ms for one branch
// per 8 lanes, 4 ms scalar. AVX-512 uses this path (no 16-lane ExpF twin yet).
// Equal to ref bit for bit (sum_exp_test.cc).
#include <immintrin.h>

#include "kernels/sum_exp_simd.h"
#include "kernels/x86/avx2_util.h"
#include "numerics/math_avx2.h"

namespace stet::kernels::avx2 {

namespace {

struct V8 : F32x8 {
  static Vec Exp(Vec y) { return ExpF8(y); }
  // Lanes where !(v < bound), NaN included, as bits.
  static uint32_t LanesNotBelow(Vec v, Vec bound) {
    return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(v, bound, _CMP_NLT_UQ)));
  }
  static bool AnyNotBelow(Vec v, Vec bound) { return LanesNotBelow(v, bound) != 0; }
};

}  // namespace

float SumExpShifted(const float* x, int64_t n, float shift) {
  return SumExpSimd<V8>::Sum(x, n, shift);
}

}  // namespace stet::kernels::avx2
