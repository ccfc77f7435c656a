#include "numerics/dtype.h"

#include <string>

#include "base/check.h"
#include "numerics/codecs.h"

namespace stet {

namespace {

// Every GGUF element type stet knows, one row each. `computable`: stet
// dequantizes it, quantizes to it and multiplies by it (kernels/matmul_table.h
// lists the kernels that serve it); the computable rows, in this order, are what
// errors, tools and tests iterate. llama_ftype: K-quants as llama.cpp's "S" mixes
// (q3_k_s, q4_k_s, q5_k_s).
struct DTypeRow {
  DType type;
  DTypeTraits traits;
  bool computable;
};

// A computable row: its block struct gives the size; f16 fields as offsets into it.
// clang-format off
#define STET_PLAIN(T, name, bytes, ftype)                                         \
  {DType::k##T, {name, 1, bytes, ftype, ActFormat::kFloat, DType::k##T,           \
                 codecs::Dequant##T, codecs::Quantize##T}, true}
#define STET_BLOCK(T, name, elems, ftype, act, fallback, f16a, f16b)              \
  {DType::k##T, {name, elems, sizeof(Block##T), ftype, ActFormat::act,            \
                 DType::k##fallback, codecs::Dequant##T, codecs::Quantize##T,     \
                 {f16a, f16b}}, true}
#define STET_KNOWN(T, name, elems, bytes) {DType::k##T, {name, elems, bytes, -1}, false}
// clang-format on

constexpr DTypeRow kRows[] = {
    STET_PLAIN(F32, "f32", 4, 0),
    STET_PLAIN(F16, "f16", 2, 1),
    STET_PLAIN(BF16, "bf16", 2, 32),
    STET_BLOCK(Q8_0, "q8_0", kQK, 7, kQ8, Q8_0, 0, -1),
    STET_BLOCK(Q4_0, "q4_0", kQK, 2, kQ8, Q8_0, 0, -1),
    STET_BLOCK(Q4_1, "q4_1", kQK, 3, kQ8, Q8_0, 0, 2),
    STET_BLOCK(Q5_0, "q5_0", kQK, 8, kQ8, Q8_0, 0, -1),
    STET_BLOCK(Q5_1, "q5_1", kQK, 9, kQ8, Q8_0, 0, 2),
    STET_BLOCK(IQ4_NL, "iq4_nl", kQK, 25, kQ8, Q8_0, 0, -1),
    STET_BLOCK(Q2_K, "q2_k", kQKK, 10, kQ8K, IQ4_NL, 80, 82),
    STET_BLOCK(Q3_K, "q3_k", kQKK, 11, kQ8K, IQ4_NL, 108, -1),
    STET_BLOCK(Q4_K, "q4_k", kQKK, 14, kQ8K, Q5_0, 0, 2),
    STET_BLOCK(Q5_K, "q5_k", kQKK, 16, kQ8K, Q5_1, 0, 2),
    STET_BLOCK(Q6_K, "q6_k", kQKK, 18, kQ8K, Q8_0, 208, -1),
    STET_BLOCK(IQ4_XS, "iq4_xs", kQKK, 30, kQ8K, IQ4_NL, 0, -1),
    STET_KNOWN(Q8_1, "q8_1", kQK, 36),
    STET_KNOWN(Q8_K, "q8_k", kQKK, 292),
    STET_KNOWN(I8, "i8", 1, 1),
    STET_KNOWN(I16, "i16", 1, 2),
    STET_KNOWN(I32, "i32", 1, 4),
    STET_KNOWN(I64, "i64", 1, 8),
    STET_KNOWN(F64, "f64", 1, 8),
};

#undef STET_PLAIN
#undef STET_BLOCK
#undef STET_KNOWN

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
