#include "numerics/dtype.h"

#include "base/check.h"

namespace stet {

std::optional<DTypeTraits> GetDTypeTraits(uint32_t id) {
  switch (static_cast<DType>(id)) {
    case DType::kF32:
      return DTypeTraits{"f32", 1, 4};
    case DType::kF16:
      return DTypeTraits{"f16", 1, 2};
    case DType::kQ4_0:
      return DTypeTraits{"q4_0", kQK, 18};
    case DType::kQ4_1:
      return DTypeTraits{"q4_1", kQK, 20};
    case DType::kQ5_0:
      return DTypeTraits{"q5_0", kQK, 22};
    case DType::kQ5_1:
      return DTypeTraits{"q5_1", kQK, 24};
    case DType::kQ8_0:
      return DTypeTraits{"q8_0", kQK, 34};
    case DType::kQ8_1:
      return DTypeTraits{"q8_1", kQK, 36};
    case DType::kQ2_K:
      return DTypeTraits{"q2_k", kQKK, 84};
    case DType::kQ3_K:
      return DTypeTraits{"q3_k", kQKK, 110};
    case DType::kQ4_K:
      return DTypeTraits{"q4_k", kQKK, 144};
    case DType::kQ5_K:
      return DTypeTraits{"q5_k", kQKK, 176};
    case DType::kQ6_K:
      return DTypeTraits{"q6_k", kQKK, 210};
    case DType::kQ8_K:
      return DTypeTraits{"q8_k", kQKK, 292};
    case DType::kIQ4_NL:
      return DTypeTraits{"iq4_nl", kQK, 18};
    case DType::kIQ4_XS:
      return DTypeTraits{"iq4_xs", kQKK, 136};
    case DType::kI8:
      return DTypeTraits{"i8", 1, 1};
    case DType::kI16:
      return DTypeTraits{"i16", 1, 2};
    case DType::kI32:
      return DTypeTraits{"i32", 1, 4};
    case DType::kI64:
      return DTypeTraits{"i64", 1, 8};
    case DType::kF64:
      return DTypeTraits{"f64", 1, 8};
    case DType::kBF16:
      return DTypeTraits{"bf16", 1, 2};
  }
  return std::nullopt;
}

const char* DTypeName(DType t) {
  auto tr = GetDTypeTraits(static_cast<uint32_t>(t));
  return tr ? tr->name : "unknown";
}

bool DTypeSupported(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS:
      return true;
    default:
      return false;
  }
}

const char* SupportedDTypeList() {
  return "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k, "
         "iq4_xs";
}

int64_t RowBytes(DType t, int64_t n) {
  auto tr = GetDTypeTraits(static_cast<uint32_t>(t));
  STET_CHECK(tr.has_value());
  STET_CHECK(n % tr->block_elems == 0);
  return n / tr->block_elems * tr->block_bytes;
}

}  // namespace stet
