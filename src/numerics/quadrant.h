// The last step of a sin/cos after reduction to [0, pi/2): SinCosD (math.cc) and
// random_model.cc's normal deviates share it. A quarter turn per quadrant, negations
// and swaps only, so exact: the reduction and the polynomials own all the rounding.
#pragma once

#include <cstdint>

namespace stet {

// sin and cos of r + quadrant * pi/2 (quadrant mod 4) from s = sin r and c = cos r.
inline void SinCosOfQuadrant(int64_t quadrant, double s, double c, double* sin_out,
                             double* cos_out) {
  switch (quadrant & 3) {
    case 0:
      *sin_out = s, *cos_out = c;
      break;
    case 1:
      *sin_out = c, *cos_out = -s;
      break;
    case 2:
      *sin_out = -s, *cos_out = -c;
      break;
    default:
      *sin_out = -c, *cos_out = s;
      break;
  }
}

}  // namespace stet
