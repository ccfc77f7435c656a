// Scalar activation quantization (rule R6: per row, per block along K, never
// across rows). The AVX2 twin (cpu/quantize_act_avx2.cc) must equal it bit for
// bit. Numerics: amax exact, d = amax/127 (IEEE div), q = nearbyint(x*(1/d)) ties
// to even, integer sums exact; depends on the row alone (quantize_act_test.cc).
#include <cmath>
#include <cstring>

#include "kernels/internal.h"

namespace stet::kernels::ref {

namespace {

// Clamps to [-127, 127], nan -> -127 (the SIMD path does the same), so |q| <= 127
// always: the q8_0 dot's sign trick needs that. Ordinary inputs never reach the
// clamp (|x * id| <= 127 up to one rounding); only a block whose amax is below
// ~4e-37 (1/d overflows to inf) or holds nan does.
inline int8_t RoundToInt8(float t) {
  const float r = std::nearbyint(t);
  if (!(r >= -127.0f)) return -127;
  if (r > 127.0f) return 127;
  return static_cast<int8_t>(r);
}

// Quantizes n values; returns d.
float QuantizeBlock(const float* x, int n, int8_t* q) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    amax = a > amax ? a : amax;
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < n; ++i) q[i] = RoundToInt8(x[i] * id);
  return d;
}

}  // namespace

void QuantizeActQ8(const float* x, ActQ8* a) {
  FillActQ8(x, a, [](const float* xb, int8_t* qb, int32_t* qsum) {
    const float d = QuantizeBlock(xb, kQK, qb);
    int32_t sum = 0;
    for (int i = 0; i < kQK; ++i) sum += qb[i];
    *qsum = sum;
    return d;
  });
}

void QuantizeActQ8K(const float* x, ActQ8K* a) {
  FillActQ8K(x, a, [](const float* xb, int8_t* q, int16_t* bsums) {
    const float d = QuantizeBlock(xb, kQKK, q);
    for (int g = 0; g < kQKK / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += q[16 * g + i];
      bsums[g] = static_cast<int16_t>(sum);
    }
    return d;
  });
}

void ActResidual(const float* x, int64_t m, int64_t k, int block, float* r) {
  int8_t q[kQKK];
  for (int64_t i = 0; i < m * k; i += block) {
    const float d = QuantizeBlock(x + i, block, q);
    for (int e = 0; e < block; ++e) r[i + e] = x[i + e] - d * static_cast<float>(q[e]);
  }
}

}  // namespace stet::kernels::ref
