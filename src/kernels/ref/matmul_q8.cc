// Scalar reference MatMul for q8_0/q4_0/q4_1/q5_0/q5_1/iq4_nl weights on 32-block
// quantized activations. Numerics: block b's exact int32 dot of the integer weights
// (q - 8, q, q - 16, q, kIQ4NLValues[q]) with the activation q's goes to lane b%8 as
// lane = fma(dw*dx, float(isum), lane) (q4_1/q5_1 then lane = fma(mw, dx*float(sum qx),
// lane)); fixed lane tree; depends on w.cols only (matmul_test.cc).
#include <cmath>
#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "kernels/internal.h"
#include "numerics/half.h"

namespace stet::kernels::ref {

namespace {

// Exact integer dot of one weight block with 32 activation q's.
inline int32_t BlockDot(const BlockQ8_0& b, const int8_t* q) {
  int32_t s = 0;
  for (int i = 0; i < kQK; ++i) s += static_cast<int32_t>(b.qs[i]) * q[i];
  return s;
}
inline int32_t BlockDot(const BlockQ4_0& b, const int8_t* q) {
  int32_t s = 0;
  for (int i = 0; i < kQK / 2; ++i) {
    s += ((b.qs[i] & 0x0f) - 8) * q[i];
    s += ((b.qs[i] >> 4) - 8) * q[i + kQK / 2];
  }
  return s;
}
inline int32_t BlockDot(const BlockQ4_1& b, const int8_t* q) {
  int32_t s = 0;
  for (int i = 0; i < kQK / 2; ++i) {
    s += (b.qs[i] & 0x0f) * q[i];
    s += (b.qs[i] >> 4) * q[i + kQK / 2];
  }
  return s;
}

// The 5-bit quant of element e of a q5_0 / q5_1 block.
template <typename Block>
inline int Q5(const Block& b, int e) {
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  const int nib = e < kQK / 2 ? (b.qs[e] & 0x0f) : (b.qs[e - kQK / 2] >> 4);
  return nib | static_cast<int>(((qh >> e) & 1u) << 4);
}
inline int32_t BlockDot(const BlockQ5_0& b, const int8_t* q) {
  int32_t s = 0;
  for (int e = 0; e < kQK; ++e) s += (Q5(b, e) - 16) * q[e];
  return s;
}
inline int32_t BlockDot(const BlockQ5_1& b, const int8_t* q) {
  int32_t s = 0;
  for (int e = 0; e < kQK; ++e) s += Q5(b, e) * q[e];
  return s;
}
inline int32_t BlockDot(const BlockIQ4_NL& b, const int8_t* q) {
  int32_t s = 0;
  for (int i = 0; i < kQK / 2; ++i) {
    s += kIQ4NLValues[b.qs[i] & 0x0f] * q[i];
    s += kIQ4NLValues[b.qs[i] >> 4] * q[i + kQK / 2];
  }
  return s;
}

// DotRows' dot: every block one at a time.
struct Dot {
  template <typename Block>
  static int64_t Lead(const Block*, const int8_t*, const float*, const float*, int64_t, float*) {
    return 0;
  }
  template <typename Block>
  static int32_t Of(const Block& b, const int8_t* q) {
    return BlockDot(b, q);
  }
};

constexpr auto kKernels =
    RowWalkKernels<DotRows<Dot>, BlockQ8_0, BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1,
                   BlockIQ4_NL>({"ref.q8", Isa::kScalar, kEveryClass, Packed::kNo, ActLayout::kQ8});

}  // namespace

std::span<const MatMulKernel> MatMulQ8Kernels() { return kKernels; }

}  // namespace stet::kernels::ref
