// Argmax's SIMD control flow, shared by the AVX2 and NEON paths: a template over
// a small vector-traits struct V (V::kWidth float lanes, V::kAcc accumulators;
// Splat, Load, MaxKeep, Store and FirstEqual), so only the width and the
// instructions differ between the paths.
//
// Equal to ref/argmax.cc's serial strict-> loop (argmax_test.cc). That loop
// returns 0 when x[0] is NaN; otherwise the first index holding M, the largest
// non-NaN value (NaNs never compare greater; before M's first index every value
// is below M, after it none is above). Two passes: M by vector max ignoring
// NaNs (max order is free: max is exact), then the first index equal to M (==
// also matches a zero of the other sign, as the serial loop's > does not move
// past it). Include only from files compiled for V's ISA.
#pragma once

#include <cmath>
#include <cstdint>

namespace stet::kernels {

template <typename V>
struct ArgmaxSimd {
  using Vec = typename V::Vec;
  static constexpr int kW = V::kWidth;

  // The largest non-NaN x[i]; -inf if there is none. V::MaxKeep(x, acc) keeps acc
  // where x is NaN (acc itself is never NaN: it starts at -inf).
  static float MaxIgnoringNan(const float* x, int64_t n) {
    Vec acc[V::kAcc];
    for (Vec& a : acc) a = V::Splat(-INFINITY);
    int64_t i = 0;
    for (; i + V::kAcc * kW <= n; i += V::kAcc * kW) {
#pragma GCC unroll 8
      for (int a = 0; a < V::kAcc; ++a) acc[a] = V::MaxKeep(V::Load(x + i + a * kW), acc[a]);
    }
    for (; i + kW <= n; i += kW) acc[0] = V::MaxKeep(V::Load(x + i), acc[0]);
    for (int a = 1; a < V::kAcc; ++a) acc[0] = V::MaxKeep(acc[a], acc[0]);
    alignas(64) float l[kW];
    V::Store(l, acc[0]);
    float m = -INFINITY;
    for (float v : l) m = v > m ? v : m;
    for (; i < n; ++i) m = x[i] > m ? x[i] : m;
    return m;
  }

  static int64_t Argmax(const float* x, int64_t n) {
    if (n <= 1 || std::isnan(x[0])) return 0;
    const float m = MaxIgnoringNan(x, n);
    const Vec mv = V::Splat(m);
    int64_t i = 0;
    for (; i + kW <= n; i += kW) {
      const int lane = V::FirstEqual(V::Load(x + i), mv);
      if (lane >= 0) return i + lane;
    }
    for (; i < n; ++i) {
      if (x[i] == m) return i;
    }
    return 0;  // not reached: x[0] is not NaN, so some x[i] == m
  }
};

}  // namespace stet::kernels
