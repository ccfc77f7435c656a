// Status/Result carry codes and messages; the macros propagate errors.
#include "base/status.h"

#include <gtest/gtest.h>

#include "base/hash.h"

namespace stet {
namespace {

Result<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}
Result<int> Quarter(int x) {
  STET_ASSIGN_OR_RETURN(int h, Half(x));
  STET_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Status, ResultPropagates) {
  EXPECT_EQ(*Quarter(8), 2);
  auto r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().ToString(), "InvalidArgument: odd: 3");
}

TEST(Hash, Sha256KnownAnswer) {
  EXPECT_EQ(Sha256Hex("abc", 3),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_FALSE(Sha256File("/nonexistent/file").ok());
}

TEST(Hash, Fnv1a64KnownAnswer) { EXPECT_EQ(Fnv1a64("a", 1), 0xaf63dc4c8601ec8cull); }

}  // namespace
}  // namespace stet
