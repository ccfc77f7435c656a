// GeGlu's and SwiGlu's SIMD loop, shared by the AVX2 and NEON paths: out = act(gate) * up,
// V::kWidth lanes at a time by the vector activation (lane for lane the scalar one's bits,
// math_avx2.h / math_neon.h), the tail by the scalar one (numerics/math.h). One multiply
// per element after the activation, as ref/geglu.cc and ref/swiglu.cc: equal bit for bit.
// Include only from files compiled for V's ISA (V: F32x8 in x86/avx2_util.h, F32x4 in
// neon/neon_util.h).
#pragma once

#include <cstdint>

namespace stet::kernels {

template <typename V, typename V::Vec (*VecAct)(typename V::Vec), float (*Act)(float)>
inline void GatedSimd(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) {
    V::StoreU(out + i, V::Mul(VecAct(V::Load(gate + i)), V::Load(up + i)));
  }
  for (; i < n; ++i) out[i] = Act(gate[i]) * up[i];
}

}  // namespace stet::kernels
