// The MatMul kernel table (kernels/matmul_table.h): every computable type has a
// complete set of rows (a scalar row for every row class, so every ISA can fall
// back to it), every row is well formed, the packed layouts and their readers
// match, and the dispatch picks the rows it is documented to pick. A new type or
// kernel with a missing or malformed row fails here (docs/recipes.md).
#include "kernels/matmul_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>

#include "kernels/kernels.h"

namespace stet::kernels {
namespace {

bool LayoutFits(ActFormat f, ActLayout a) {
  switch (f) {
    case ActFormat::kFloat:
      return a == ActLayout::kFloat || a == ActLayout::kPairs;
    case ActFormat::kQ8:
      return a == ActLayout::kQ8 || a == ActLayout::kQ8V;
    case ActFormat::kQ8K:
      return a == ActLayout::kQ8K || a == ActLayout::kQ8KV;
  }
  return false;
}

TEST(KernelTable, EveryComputableTypeHasAScalarRowForEveryClass) {
  for (DType t : ComputableDTypes()) {
    for (int c = 0; c < kRowClasses; ++c) {
      const MatMulKernel* k = FindKernel(t, Isa::kScalar, RowClass(c), false);
      ASSERT_NE(k, nullptr) << DTypeName(t) << " " << RowClassName(RowClass(c));
      EXPECT_EQ(k->isa, Isa::kScalar) << DTypeName(t);
      EXPECT_EQ(k->type, t);
      // Every ISA finds a row (its own or a fallback's), packed copy or not.
      for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
        for (bool packed : {false, true}) {
          const MatMulKernel* r = FindKernel(t, isa, RowClass(c), packed);
          ASSERT_NE(r, nullptr) << DTypeName(t) << " " << IsaName(isa);
          EXPECT_TRUE(KernelRunsHere(*r));
          EXPECT_TRUE(packed || r->packed != Packed::kNeeds) << r->name;
        }
      }
    }
  }
}

TEST(KernelTable, RowsAreWellFormed) {
  std::set<std::tuple<std::string, DType, Isa>> seen;
  for (const MatMulKernel& k : MatMulKernels()) {
    SCOPED_TRACE(std::string(k.name) + " " + DTypeName(k.type));
    EXPECT_TRUE(DTypeSupported(k.type));
    EXPECT_NE(k.rows, nullptr);
    EXPECT_NE(k.classes, 0);
    EXPECT_EQ(k.classes & ~kEveryClass, 0);
    EXPECT_TRUE(seen.insert({k.name, k.type, k.isa}).second) << "a duplicate row";
    const DTypeTraits tr = *GetDTypeTraits(static_cast<uint32_t>(k.type));
    EXPECT_TRUE(LayoutFits(tr.act, k.act)) << "activation layout of another format";
    // Flags for the vertical layouts, and ActQ8K's pair sums (kActSubSums) for
    // the superblock layout; the other layouts carry nothing optional.
    const bool vertical = k.act == ActLayout::kQ8V || k.act == ActLayout::kQ8KV;
    const bool pair_sums = k.act == ActLayout::kQ8K && k.act_flags == kActSubSums;
    EXPECT_TRUE(vertical || pair_sums || k.act_flags == 0) << "a flag its layout does not carry";
    // A row that reads the packed copy needs a packed layout for its type.
    if (k.packed != Packed::kNo) {
      EXPECT_GT(PackedBytes(WeightView{k.type, 16, 1024, nullptr, RowBytes(k.type, 1024)}), 0);
    }
    // The ISA prefix of the name says whose row it is (what --explain prints).
    EXPECT_EQ(std::string(k.name).rfind(k.isa == Isa::kScalar ? "ref." : IsaName(k.isa), 0), 0u);
  }
}

#if defined(__x86_64__)
// A packed layout nobody reads would only cost memory: each has a reader.
TEST(KernelTable, EveryPackedLayoutIsRead) {
  for (DType t : ComputableDTypes()) {
    const WeightView w{t, 16, 1024, nullptr, RowBytes(t, 1024)};
    if (PackedBytes(w) == 0) continue;
    bool read = false;
    for (const MatMulKernel& k : MatMulKernels()) read |= k.type == t && k.packed != Packed::kNo;
    EXPECT_TRUE(read) << DTypeName(t);
  }
}

// The preference order the dispatch keeps (measured on Xeon and Zen parts, see
// the kernel files): packed rows for decode, AVX-512 packed for small batches of
// the types that have it, the vertical layouts from 16 rows, AVX2 below for the rest.
TEST(KernelTable, DispatchPicksTheDocumentedRows) {
  auto name = [](DType t, Isa isa, RowClass c, bool packed) {
    const MatMulKernel* k = FindKernel(t, isa, c, packed);
    return std::string(k ? k->name : "-");
  };
  EXPECT_EQ(name(DType::kQ4_1, Isa::kScalar, RowClass::kDecode, true), "ref.q8");
  if (CpuHasAvx2Fma()) {
    EXPECT_EQ(name(DType::kQ4_1, Isa::kAvx2, RowClass::kDecode, true), "avx2.packed");
    EXPECT_EQ(name(DType::kQ4_1, Isa::kAvx2, RowClass::kPrefill, false), "avx2.tiles");
    EXPECT_EQ(name(DType::kQ6_K, Isa::kAvx2, RowClass::kSmall, true), "avx2.packed");
    EXPECT_EQ(name(DType::kQ2_K, Isa::kAvx2, RowClass::kDecode, true), "avx2.qk");
    EXPECT_EQ(name(DType::kF16, Isa::kAvx2, RowClass::kDecode, true), "avx2.float");
  }
  if (CpuHasAvx512()) {
    EXPECT_EQ(name(DType::kQ4_1, Isa::kAvx512, RowClass::kDecode, true), "avx512.packed");
    EXPECT_EQ(name(DType::kQ4_K, Isa::kAvx512, RowClass::kSmall, true), "avx512.packed");
    EXPECT_EQ(name(DType::kQ4_1, Isa::kAvx512, RowClass::kPrefill, true), "avx512.vertical");
    EXPECT_EQ(name(DType::kQ4_1, Isa::kAvx512, RowClass::kDecode, false), "avx2.tiles");
    EXPECT_EQ(name(DType::kQ5_0, Isa::kAvx512, RowClass::kSmall, true), "avx2.packed");
    EXPECT_EQ(name(DType::kQ6_K, Isa::kAvx512, RowClass::kDecode, true), "avx512.packed");
    EXPECT_EQ(name(DType::kF16, Isa::kAvx512, RowClass::kDecode, true), "avx2.float");
    EXPECT_EQ(name(DType::kF16, Isa::kAvx512, RowClass::kSmall, true), "avx512.pairs");
    EXPECT_EQ(name(DType::kIQ4_XS, Isa::kAvx512, RowClass::kPrefill, false), "avx512.vertical");
  }
}
#endif

TEST(KernelTable, DescribeListsEveryTypeAndClass) {
  const std::string table = DescribeKernelTable();
  for (DType t : ComputableDTypes()) {
    for (int c = 0; c < kRowClasses; ++c) {
      const std::string key = std::string(DTypeName(t));
      EXPECT_NE(table.find("\n" + key + " "), std::string::npos) << key;
    }
  }
  EXPECT_NE(table.find("prefill"), std::string::npos);
  EXPECT_NE(table.find("ref.q8"), std::string::npos);
}

// The plans Isa::kAuto dispatches from: given as text (STET_KERNEL_PLAN, the cache),
// printed back the same, refused with a message naming the bad item.
TEST(KernelPlan, ParsePrintAndPick) {
  auto plan =
      MatMulPlan::Parse("decode=scalar, # every type's decode: the oracle\nq4_k.small=scalar");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  for (DType t : ComputableDTypes()) {
    ASSERT_NE(plan->Get(t, RowClass::kDecode), nullptr) << DTypeName(t);
    EXPECT_EQ(plan->Get(t, RowClass::kDecode)->isa, Isa::kScalar);
    EXPECT_EQ(plan->Get(t, RowClass::kPrefill), nullptr);
  }
  EXPECT_NE(plan->Get(DType::kQ4_K, RowClass::kSmall), nullptr);
  EXPECT_EQ(plan->Get(DType::kQ4_1, RowClass::kSmall), nullptr);
  // An empty entry is the best ISA's row.
  EXPECT_EQ(plan->Pick(DType::kQ4_1, RowClass::kPrefill, true),
            FindKernel(DType::kQ4_1, BestIsa(), RowClass::kPrefill, true));
  auto again = MatMulPlan::Parse(plan->ToString());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->ToString(), plan->ToString());
  EXPECT_NE(plan->ToString().find("q4_k.small=ref.qk\n"), std::string::npos) << plan->ToString();
  for (const char* bad : {"decode", "sometimes=scalar", "q4_1.decode=nosuch", "q9_9.decode=scalar",
                          "q4_1.decode=ref.qk", "*=sse9"}) {
    auto r = MatMulPlan::Parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("kernel plan item"), std::string::npos) << bad;
  }
  if (!CpuHasAvx512()) {
    EXPECT_FALSE(MatMulPlan::Parse("prefill=avx512").ok());
  }
  if (CpuHasAvx2Fma()) {
    // A row that needs a packed copy, asked for matrices without one: its ISA's other row.
    auto p = MatMulPlan::Parse("q4_1.decode=avx2.packed");
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_STREQ(p->Pick(DType::kQ4_1, RowClass::kDecode, true)->name, "avx2.packed");
    EXPECT_STREQ(p->Pick(DType::kQ4_1, RowClass::kDecode, false)->name, "avx2.tiles");
  }
}

TEST(KernelTable, RowClasses) {
  EXPECT_EQ(RowClassOf(1), RowClass::kDecode);
  EXPECT_EQ(RowClassOf(2), RowClass::kSmall);
  EXPECT_EQ(RowClassOf(15), RowClass::kSmall);
  EXPECT_EQ(RowClassOf(16), RowClass::kBatch);
  EXPECT_EQ(RowClassOf(63), RowClass::kBatch);
  EXPECT_EQ(RowClassOf(64), RowClass::kPrefill);
  EXPECT_EQ(RowClassOf(512), RowClass::kPrefill);
  // Every row serving 16+ rows serves both batch and prefill: the split is the
  // tuner's, not the table's.
  for (const MatMulKernel& k : MatMulKernels()) {
    EXPECT_EQ((k.classes & ClassBit(RowClass::kBatch)) != 0,
              (k.classes & ClassBit(RowClass::kPrefill)) != 0)
        << k.name << " " << DTypeName(k.type);
  }
}

}  // namespace
}  // namespace stet::kernels
