// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11). A draw is
// a pure function of (seed, stream, counter) — for sampling: (seed, choice
// index, absolute token position) — so no draw depends on scheduling or on any
// shared generator state (numerics rule R7).
#pragma once

#include <array>
#include <cstdint>

namespace stet {

// Philox4x32 with 10 rounds: maps a 128-bit counter and 64-bit key to 128 random bits.
inline std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> ctr,
                                          std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += kW0;
    key[1] += kW1;
  }
  return ctr;
}

// A uniform float in [0, 1) with 24 random bits, for draw `draw` of (seed, stream, position).
inline float UniformFloat(uint64_t seed, uint32_t stream, uint64_t position, uint32_t draw = 0) {
  const auto r = Philox4x32(
      {static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32), stream, draw},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  return static_cast<float>(r[0] >> 8) * (1.0f / 16777216.0f);
}

}  // namespace stet
