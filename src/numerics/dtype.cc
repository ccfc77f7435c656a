#include "numerics/dtype.h"

#include <string>

#include "base/check.h"

namespace stet {

namespace {

// Every GGUF element type stet knows, one row each. `computable`: stet
// dequantizes it and multiplies by it (the kernels' tables serve it); the
// computable rows, in this order, are what errors, tools and tests iterate.
// llama_ftype: K-quants as llama.cpp's "S" mixes (q3_k_s, q4_k_s, q5_k_s).
struct DTypeRow {
  DType type;
  DTypeTraits traits;
  bool computable;
};
constexpr DTypeRow kRows[] = {
    {DType::kF32, {"f32", 1, 4, 0}, true},
    {DType::kF16, {"f16", 1, 2, 1}, true},
    {DType::kBF16, {"bf16", 1, 2, 32}, true},
    {DType::kQ8_0, {"q8_0", kQK, sizeof(BlockQ8_0), 7}, true},
    {DType::kQ4_0, {"q4_0", kQK, sizeof(BlockQ4_0), 2}, true},
    {DType::kQ4_1, {"q4_1", kQK, sizeof(BlockQ4_1), 3}, true},
    {DType::kQ5_0, {"q5_0", kQK, sizeof(BlockQ5_0), 8}, true},
    {DType::kQ5_1, {"q5_1", kQK, sizeof(BlockQ5_1), 9}, true},
    {DType::kIQ4_NL, {"iq4_nl", kQK, sizeof(BlockIQ4_NL), 25}, true},
    {DType::kQ2_K, {"q2_k", kQKK, sizeof(BlockQ2_K), 10}, true},
    {DType::kQ3_K, {"q3_k", kQKK, sizeof(BlockQ3_K), 11}, true},
    {DType::kQ4_K, {"q4_k", kQKK, sizeof(BlockQ4_K), 14}, true},
    {DType::kQ5_K, {"q5_k", kQKK, sizeof(BlockQ5_K), 16}, true},
    {DType::kQ6_K, {"q6_k", kQKK, sizeof(BlockQ6_K), 18}, true},
    {DType::kIQ4_XS, {"iq4_xs", kQKK, sizeof(BlockIQ4_XS), 30}, true},
    {DType::kQ8_1, {"q8_1", kQK, 36, -1}, false},
    {DType::kQ8_K, {"q8_k", kQKK, 292, -1}, false},
    {DType::kI8, {"i8", 1, 1, -1}, false},
    {DType::kI16, {"i16", 1, 2, -1}, false},
    {DType::kI32, {"i32", 1, 4, -1}, false},
    {DType::kI64, {"i64", 1, 8, -1}, false},
    {DType::kF64, {"f64", 1, 8, -1}, false},
};

const DTypeRow* FindRow(uint32_t id) {
  for (const DTypeRow& r : kRows) {
    if (static_cast<uint32_t>(r.type) == id) return &r;
  }
  return nullptr;
}

}  // namespace

std::optional<DTypeTraits> GetDTypeTraits(uint32_t id) {
  const DTypeRow* r = FindRow(id);
  if (!r) return std::nullopt;
  return r->traits;
}

const char* DTypeName(DType t) {
  const DTypeRow* r = FindRow(static_cast<uint32_t>(t));
  return r ? r->traits.name : "unknown";
}

bool DTypeSupported(DType t) {
  const DTypeRow* r = FindRow(static_cast<uint32_t>(t));
  return r && r->computable;
}

const std::vector<DType>& ComputableDTypes() {
  static const std::vector<DType> types = [] {
    std::vector<DType> v;
    for (const DTypeRow& r : kRows) {
      if (r.computable) v.push_back(r.type);
    }
    return v;
  }();
  return types;
}

const std::vector<DType>& QuantizedDTypes() {
  static const std::vector<DType> types = [] {
    std::vector<DType> v;
    for (DType t : ComputableDTypes()) {
      if (FindRow(static_cast<uint32_t>(t))->traits.block_elems > 1) v.push_back(t);
    }
    return v;
  }();
  return types;
}

const char* SupportedDTypeList() {
  static const std::string list = [] {
    std::string s;
    for (DType t : ComputableDTypes()) s += (s.empty() ? "" : ", ") + std::string(DTypeName(t));
    return s;
  }();
  return list.c_str();
}

int64_t RowBytes(DType t, int64_t n) {
  auto tr = GetDTypeTraits(static_cast<uint32_t>(t));
  STET_CHECK(tr.has_value());
  STET_CHECK(n % tr->block_elems == 0);
  return n / tr->block_elems * tr->block_bytes;
}

}  // namespace stet
