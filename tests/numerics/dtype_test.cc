// The type table (numerics/dtype.cc): one row per GGUF type; what errors,
// tools and tests iterate comes from it.
#include "numerics/dtype.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

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

// A computable row must be complete: the codecs, an activation format that matches its
// block size, f16 fields inside the block, a fallback that is computable. A new type
// with a half-filled row fails here (docs/recipes.md, "A weight type").
TEST(DTypeTable, EveryComputableRowIsComplete) {
  for (DType t : ComputableDTypes()) {
    const DTypeTraits tr = *GetDTypeTraits(static_cast<uint32_t>(t));
    SCOPED_TRACE(tr.name);
    EXPECT_NE(tr.dequantize, nullptr);
    EXPECT_NE(tr.quantize, nullptr);
    EXPECT_TRUE(DTypeSupported(tr.fallback));
    const ActFormat want = tr.block_elems == 1      ? ActFormat::kFloat
                           : tr.block_elems == kQK  ? ActFormat::kQ8
                           : tr.block_elems == kQKK ? ActFormat::kQ8K
                                                    : ActFormat::kFloat;
    EXPECT_TRUE(tr.block_elems == 1 || tr.block_elems == kQK || tr.block_elems == kQKK);
    EXPECT_EQ(static_cast<int>(tr.act), static_cast<int>(want));
    EXPECT_EQ(tr.block_elems == 1, tr.f16_fields[0] < 0) << "block types name their scale";
    for (int16_t off : tr.f16_fields) EXPECT_LE(off + 2, tr.block_bytes);
    // The codecs round-trip a block of zeros to zeros (a smoke test that they are the
    // type's own: a wrong row would write or read the wrong number of bytes).
    std::vector<float> x(static_cast<size_t>(tr.block_elems), 0.0f), y(x.size(), 1.0f);
    std::vector<uint8_t> b(static_cast<size_t>(tr.block_bytes) + 8, 0xAB);
    ASSERT_TRUE(tr.quantize(x.data(), 1, b.data()).ok());
    for (size_t i = tr.block_bytes; i < b.size(); ++i) EXPECT_EQ(b[i], 0xAB) << "wrote past";
    tr.dequantize(b.data(), 1, y.data());
    for (float v : y) EXPECT_EQ(v, 0.0f);
  }
  for (uint32_t id = 0; id < 64; ++id) {
    const auto tr = GetDTypeTraits(id);
    if (!tr || DTypeSupported(static_cast<DType>(id))) continue;
    EXPECT_EQ(tr->dequantize, nullptr) << tr->name << " is not computable";
  }
}

}  // namespace
}  // namespace stet
