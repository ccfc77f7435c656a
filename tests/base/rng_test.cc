// Pins Philox4x32-10 to the Random123 known-answer vectors and checks that
// draws depend only on (seed, stream, position).
#include "base/rng.h"

#include <gtest/gtest.h>

#include <set>

namespace stet {
namespace {

TEST(Philox, KnownAnswerVectors) {
  // Random123 kat_vectors: philox4x32_10.
  auto r = Philox4x32({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(r[0], 0x6627e8d5u);
  EXPECT_EQ(r[1], 0xe169c58du);
  EXPECT_EQ(r[2], 0xbc57ac4cu);
  EXPECT_EQ(r[3], 0x9b00dbd8u);
  r = Philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(r[0], 0x408f276du);
  EXPECT_EQ(r[1], 0x41c83b0eu);
  EXPECT_EQ(r[2], 0xa20bc7c6u);
  EXPECT_EQ(r[3], 0x6d5451fdu);
  r = Philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u});
  EXPECT_EQ(r[0], 0xd16cfe09u);
  EXPECT_EQ(r[1], 0x94fdccebu);
  EXPECT_EQ(r[2], 0x5001e420u);
  EXPECT_EQ(r[3], 0x24126ea1u);
}

TEST(Philox, UniformInRangeAndKeyed) {
  std::set<float> seen;
  for (uint64_t pos = 0; pos < 1000; ++pos) {
    const float u = UniformFloat(42, 0, pos);
    EXPECT_GE(u, 0.0f);
    EXPECT_LT(u, 1.0f);
    EXPECT_EQ(u, UniformFloat(42, 0, pos));  // pure function
    seen.insert(u);
  }
  EXPECT_GT(seen.size(), 990u);
  EXPECT_NE(UniformFloat(42, 0, 7), UniformFloat(43, 0, 7));
  EXPECT_NE(UniformFloat(42, 0, 7), UniformFloat(42, 1, 7));
}

}  // namespace
}  // namespace stet
