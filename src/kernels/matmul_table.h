// The MatMul kernel table: one row per (weight type, ISA, kernel), saying which
// row-count classes it serves (decode: 1 activation row, small: 2-15, batch:
// 16-63, prefill: 64+), whether it reads the packed copy (pack.cc) and which
// activation layout it needs. MatMulGroup dispatches from it (matmul.cc), the tests run every row
// against the scalar reference, `stet bench --explain` prints it. All rows of
// one type compute the same bits (R4), so choosing among them is free: a row
// changes speed, never a result.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "base/cpu_features.h"
#include "base/status.h"
#include "kernels/kernels.h"
#include "numerics/dtype.h"

namespace stet::kernels {

struct MatMulArgs;  // internal.h

// decode: one row (--numerics fast decode); small: 2-15 (a decoded token in the
// default mode is 2 rows, x and its residual; a few sequences, speculative
// verification); batch: 16-63 (8-31 sequences decoding together, short prompt
// chunks); prefill: 64+. Batch and prefill are both compute-bound but are timed
// apart: at 32 rows a kernel that keeps a weight load for few rows can win
// (AVX2's packed rows on a Zen 4), at 256 rows one that shares it more (the
// AVX-512 vertical rows: SmolLM2 Q4_1 pp128 0.89x the best path when 32 rows
// chose for both).
enum class RowClass : uint8_t { kDecode, kSmall, kBatch, kPrefill };
constexpr int kRowClasses = 4;
constexpr int64_t kBatchMinRows = 16;
constexpr int64_t kPrefillMinRows = 64;
inline RowClass RowClassOf(int64_t m) {
  return m <= 1                ? RowClass::kDecode
         : m < kBatchMinRows   ? RowClass::kSmall
         : m < kPrefillMinRows ? RowClass::kBatch
                               : RowClass::kPrefill;
}
const char* RowClassName(RowClass c);
constexpr uint8_t ClassBit(RowClass c) { return static_cast<uint8_t>(1u << static_cast<int>(c)); }
constexpr uint8_t kEveryClass = 15;
constexpr uint8_t kDecodeAndSmall = 3;
constexpr uint8_t kSmallAndPrefill = 14;  // small, batch and prefill
constexpr uint8_t kPrefillOnly = 12;      // batch and prefill: 16+ rows

// The activation rows as a kernel reads them (internal.h): plain floats, float
// row pairs (ActPairs), 32-block int8 (ActQ8) or its vertical layout (ActQ8V),
// superblock int8 (ActQ8K) or its vertical layout (ActQ8KV).
enum class ActLayout : uint8_t { kFloat, kPairs, kQ8, kQ8V, kQ8K, kQ8KV };
// What an activation layout carries for a row's kernel (ActQ8V / ActQ8KV
// fields; ActQ8K's sx2).
enum ActFlag : uint8_t {
  kActBiased = 1,   // q + 128 (the weights are the signed operand)
  kActQsum = 2,     // ActQ8V::qsum (q4_0/q5_0's offsets)
  kActMinSum = 4,   // ActQ8V::s (q4_1/q5_1's mins)
  kActSubSums = 8,  // ActQ8KV::sx, ActQ8K::sx2 (32-element sums)
  kActSums16 = 16,  // ActQ8KV::sx16 (16-element sums)
};

// How a row uses WeightView::packed: never, when the matrix has one, or only
// with one (rows of matrices without a packed copy skip it).
enum class Packed : uint8_t { kNo, kUses, kNeeds };

using MatMulRowsFn = void (*)(const MatMulArgs& a, int64_t r0, int64_t r1);

struct MatMulKernel {
  const char* name;  // the kernel, e.g. "avx2.packed" (not unique: one name, several types)
  DType type;
  Isa isa;
  uint8_t classes;  // ClassBit()s it serves
  Packed packed;
  ActLayout act;
  uint8_t act_flags;           // ActFlag bits
  MatMulRowsFn rows;           // y rows [r0, r1) of every activation row (threads split r)
  bool (*cpu_ok)() = nullptr;  // a CPU feature beyond the ISA's own (NEON dotprod); null: none
};

// What the kernel files list: one kernel (name, ISA, classes, packed use,
// activation layout) and the rows function for each type it serves.
struct KernelFamily {
  const char* name;
  Isa isa;
  uint8_t classes;
  Packed packed;
  ActLayout act;
  bool (*cpu_ok)() = nullptr;
};
struct TypeRows {
  DType type;
  MatMulRowsFn rows;
  uint8_t act_flags = 0;
};
template <size_t N>
constexpr std::array<MatMulKernel, N> KernelRows(const KernelFamily& f, const TypeRows (&t)[N]) {
  std::array<MatMulKernel, N> out{};
  for (size_t i = 0; i < N; ++i) {
    out[i] = {f.name, t[i].type,      f.isa,     f.classes, f.packed,
              f.act,  t[i].act_flags, t[i].rows, f.cpu_ok};
  }
  return out;
}
// The rows of family f for the float weight types: rows(std::integral_constant<DType,
// T>{}) gives T's rows function, for T = f32, f16, bf16.
template <typename Fn>
constexpr std::array<MatMulKernel, 3> FloatKernelRows(const KernelFamily& f, Fn rows) {
  return KernelRows(f, {{DType::kF32, rows(std::integral_constant<DType, DType::kF32>{})},
                        {DType::kF16, rows(std::integral_constant<DType, DType::kF16>{})},
                        {DType::kBF16, rows(std::integral_constant<DType, DType::kBF16>{})}});
}
// The rows of family f for the types Tags::kType... (block structs, or float
// loaders): fn(std::type_identity<Tag>{}) gives each one's TypeRows.
template <typename... Tags, typename Fn>
constexpr std::array<MatMulKernel, sizeof...(Tags)> KernelRowsOf(const KernelFamily& f, Fn fn) {
  const TypeRows t[] = {fn(std::type_identity<Tags>{})...};
  return KernelRows(f, t);
}
// KernelRowsOf's fn for a rows function template F over block types: F<B> serves B::kType.
#define STET_ROWS_OF(F)                                 \
  [](auto tag) {                                        \
    using B_ = typename decltype(tag)::type;            \
    return ::stet::kernels::TypeRows{B_::kType, F<B_>}; \
  }
template <size_t A, size_t B>
constexpr std::array<MatMulKernel, A + B> Concat(const std::array<MatMulKernel, A>& a,
                                                 const std::array<MatMulKernel, B>& b) {
  std::array<MatMulKernel, A + B> out{};
  for (size_t i = 0; i < A; ++i) out[i] = a[i];
  for (size_t i = 0; i < B; ++i) out[A + i] = b[i];
  return out;
}

// Every row built into this binary, in preference order within each (type, ISA).
std::span<const MatMulKernel> MatMulKernels();
// True when this CPU can run the row (its ISA and any extra feature).
bool KernelRunsHere(const MatMulKernel& k);
// The row `isa` uses for (t, c): its first row serving c (skipping rows that need
// a packed copy when `packed` is false), else the next ISA down the chain AVX-512
// -> AVX2 -> scalar, NEON -> scalar. Null only for a type without a scalar row.
const MatMulKernel* FindKernel(DType t, Isa isa, RowClass c, bool packed);
// The ISA one step down the chain (kScalar for kScalar).
Isa FallbackIsa(Isa isa);

// Which row serves each (weight type, row class) under Isa::kAuto: chosen by
// measurement (matmul_tune.h) or given (Parse). An empty entry is the best ISA's
// row (FindKernel); an entry whose row needs a packed copy the matrices lack is its
// ISA's row without one. Whatever the plan, the bits are those of every other.
class MatMulPlan {
 public:
  const MatMulKernel* Pick(DType t, RowClass c, bool packed) const;
  const MatMulKernel* Get(DType t, RowClass c) const;  // null: the default
  void Set(DType t, RowClass c, const MatMulKernel* k);
  bool empty() const;
  // Comma- or newline-separated "[type.]class=target" (type: a weight type, all
  // if left out; class: decode, small, batch, prefill or *; target: an ISA — its row —
  // or a kernel name, e.g. "decode=scalar,small=avx2,q4_k.prefill=avx512.vertical").
  // '#' starts a comment. Errors name the item; targets must run on this CPU.
  static Result<MatMulPlan> Parse(const std::string& spec);
  // The set entries as Parse reads them, one "type.class=kernel" a line.
  std::string ToString() const;

 private:
  static constexpr int kTypeIds = 32;
  std::array<std::array<const MatMulKernel*, kRowClasses>, kTypeIds> rows_{};
};

// MatMulGroup (kernels.h) through row k, whatever the row count: for the tests
// (every row against the scalar reference) and the tuner. The activations are
// quantized with quant_isa's quantizer (any gives the same bits). k must run on
// this CPU, serve the matrices' type, and find packed copies if it needs them.
void MatMulWith(const MatMulKernel& k, const WeightView* const* ws, int n, const float* x,
                int64_t m, float* const* ys, ThreadPool* pool, Isa quant_isa);

// The table, one line per (type, class): the row each ISA of this CPU uses, and
// (with a plan) the row Isa::kAuto uses, as `stet bench --explain` prints it.
std::string DescribeKernelTable(const MatMulPlan* plan = nullptr);

}  // namespace stet::kernels
