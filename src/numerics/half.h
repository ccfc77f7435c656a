// Exact conversions between float and IEEE binary16 / bfloat16. Widening is
// exact; narrowing rounds to nearest, ties to even (as F16C's _MM_FROUND_TO_NEAREST_INT
// does), so the scalar and SIMD paths agree bit for bit. Pinned by half_test.cc.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace stet {

inline uint32_t FloatBits(float f) { return std::bit_cast<uint32_t>(f); }
inline float BitsFloat(uint32_t u) { return std::bit_cast<float>(u); }

inline float F16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp == 0) {
    if (mant == 0) return BitsFloat(sign);
    // Subnormal: normalize.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    mant &= 0x3ff;
    return BitsFloat(sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant << 13));
  }
  return BitsFloat(sign | (exp + 127 - 15) << 23 | (mant << 13));
}

inline uint16_t F32ToF16(float f) {
  const uint32_t x = FloatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000u)
    return static_cast<uint16_t>(sign | 0x7e00 | ((abs >> 13) & 0x3ff));  // nan
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);    // overflow -> inf
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: value / 2^-24, rounded to nearest even.
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to 0
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffff) | 0x800000;
    const int shift = 126 - static_cast<int>(e);  // 14 + (113 - e) ... bits to drop
    const uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    uint32_t r = q + ((rem > halfway || (rem == halfway && (q & 1))) ? 1 : 0);
    return static_cast<uint16_t>(sign | r);
  }
  // Normal: rebias exponent and round the 13 dropped mantissa bits to nearest even.
  uint32_t r = abs - 0x38000000u;  // exponent 127 -> 15
  const uint32_t rem = r & 0x1fff;
  r >>= 13;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;  // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | r);
}

inline float BF16ToF32(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }

inline uint16_t F32ToBF16(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7fffffff) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet nan
  const uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace stet
