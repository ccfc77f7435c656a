// The type table (numerics/dtype.cc): one row per GGUF type; what errors,
// tools and tests iterate comes from it.
#include "numerics/dtype.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace stet {
namespace {

TEST(DTypeTable, ComputableTypesInTheirDocumentedOrder) {
  // The list users read in errors ("... is not supported; stet computes with ...").
  EXPECT_STREQ(SupportedDTypeList(),
               "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, "
               "q6_k, iq4_xs");
  std::string joined;
  for (DType t : ComputableDTypes()) {
    EXPECT_TRUE(DTypeSupported(t)) << DTypeName(t);
    joined += (joined.empty() ? "" : ", ") + std::string(DTypeName(t));
  }
  EXPECT_EQ(joined, SupportedDTypeList());
}

TEST(DTypeTable, RowsAreConsistent) {
  std::set<std::string> names;
  int known = 0;
  for (uint32_t id = 0; id < 64; ++id) {
    const auto tr = GetDTypeTraits(id);
    if (!tr) continue;
    ++known;
    EXPECT_TRUE(names.insert(tr->name).second) << tr->name;
    EXPECT_EQ(DTypeName(static_cast<DType>(id)), std::string(tr->name));
    EXPECT_GT(tr->block_bytes, 0) << tr->name;
    EXPECT_EQ(RowBytes(static_cast<DType>(id), tr->block_elems * 4), tr->block_bytes * 4);
  }
  EXPECT_EQ(known, 22);
  EXPECT_FALSE(DTypeSupported(DType::kQ8_K));
  EXPECT_FALSE(DTypeSupported(static_cast<DType>(99)));
  EXPECT_STREQ(DTypeName(static_cast<DType>(99)), "unknown");
  for (DType t : QuantizedDTypes()) {
    EXPECT_TRUE(DTypeSupported(t)) << DTypeName(t);
    EXPECT_GT(GetDTypeTraits(static_cast<uint32_t>(t))->block_elems, 1) << DTypeName(t);
  }
  EXPECT_EQ(QuantizedDTypes().size() + 3, ComputableDTypes().size());  // + f32, f16, bf16
}

}  // namespace
}  // namespace stet
