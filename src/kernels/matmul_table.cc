// The MatMul kernel table (matmul_table.h): each kernel file's rows, gathered in
// preference order — within an ISA the packed-layout rows lead (they stream the
// matrix once), then the paired/vertical batch layouts, then the plain tiles —
// and the lookup MatMulGroup uses, resolved once per (type, ISA, class, packed).
#include "kernels/matmul_table.h"

#include <array>
#include <cstdio>
#include <vector>

#include "base/check.h"
#include "kernels/internal.h"

namespace stet::kernels {

namespace {

void Append(std::vector<MatMulKernel>* v, std::span<const MatMulKernel> rows) {
  v->insert(v->end(), rows.begin(), rows.end());
}

std::vector<MatMulKernel> BuildTable() {
  std::vector<MatMulKernel> v;
  Append(&v, ref::MatMulFloatKernels());
  Append(&v, ref::MatMulQ8Kernels());
  Append(&v, ref::MatMulQKKernels());
#if defined(STET_KERNELS_HAVE_AVX2)
  Append(&v, avx2::MatMulPackedKernels());
  Append(&v, avx2::MatMulPackedQKKernels());
  Append(&v, avx2::MatMulFloatKernels());
  Append(&v, avx2::MatMulQ8Kernels());
  Append(&v, avx2::MatMulQKKernels());
  Append(&v, avx2::MatMulQKLowBitKernels());
#endif
#if defined(STET_KERNELS_HAVE_AVX512)
  Append(&v, avx512::MatMulPackedKernels());
  Append(&v, avx512::MatMulFloatKernels());
  Append(&v, avx512::MatMulQ8Kernels());
  Append(&v, avx512::MatMulQKKernels());
  Append(&v, avx512::MatMulQKUnpackedKernels());
#endif
#if defined(STET_KERNELS_HAVE_NEON)
  Append(&v, neon::MatMulFloatKernels());
  Append(&v, neon::MatMulQ8Kernels());
  Append(&v, neon::MatMulQKKernels());
#endif
  return v;
}

const std::vector<MatMulKernel>& Table() {
  static const std::vector<MatMulKernel> table = BuildTable();
  return table;
}

bool IsaRunsHere(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return true;
    case Isa::kAvx2:
      return CpuHasAvx2Fma();
    case Isa::kAvx512:
      return CpuHasAvx2Fma() && CpuHasAvx512();
    case Isa::kNeon:
      return CpuHasNeon();
  }
  return false;
}

const MatMulKernel* Search(DType t, Isa isa, RowClass c, bool packed) {
  for (Isa i = isa;; i = FallbackIsa(i)) {
    for (const MatMulKernel& k : Table()) {
      if (k.type == t && k.isa == i && (k.classes & ClassBit(c)) != 0 &&
          (packed || k.packed != Packed::kNeeds) && KernelRunsHere(k)) {
        return &k;
      }
    }
    if (i == Isa::kScalar) return nullptr;
  }
}

// FindKernel's answers, resolved once: [type id][isa][class][packed].
constexpr int kTypeIds = 32;
constexpr int kIsas = 4;
using Resolved = std::array<std::array<std::array<std::array<const MatMulKernel*, 2>, kRowClasses>,
                                       kIsas>,
                            kTypeIds>;

const Resolved& Index() {
  static const Resolved index = [] {
    Resolved r{};
    for (int t = 0; t < kTypeIds; ++t) {
      for (int i = 0; i < kIsas; ++i) {
        for (int c = 0; c < kRowClasses; ++c) {
          for (int p = 0; p < 2; ++p) {
            r[t][i][c][p] = Search(static_cast<DType>(t), static_cast<Isa>(i),
                                   static_cast<RowClass>(c), p == 1);
          }
        }
      }
    }
    return r;
  }();
  return index;
}

}  // namespace

const char* RowClassName(RowClass c) {
  switch (c) {
    case RowClass::kDecode:
      return "decode";
    case RowClass::kSmall:
      return "small";
    case RowClass::kPrefill:
      return "prefill";
  }
  return "?";
}

std::span<const MatMulKernel> MatMulKernels() { return Table(); }

bool KernelRunsHere(const MatMulKernel& k) {
  return IsaRunsHere(k.isa) && (k.cpu_ok == nullptr || k.cpu_ok());
}

Isa FallbackIsa(Isa isa) { return isa == Isa::kAvx512 ? Isa::kAvx2 : Isa::kScalar; }

const MatMulKernel* FindKernel(DType t, Isa isa, RowClass c, bool packed) {
  const auto id = static_cast<uint32_t>(t), i = static_cast<uint32_t>(isa);
  if (id >= kTypeIds || i >= kIsas) return nullptr;
  return Index()[id][i][static_cast<int>(c)][packed ? 1 : 0];
}

std::string DescribeKernelTable() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (IsaRunsHere(isa)) isas.push_back(isa);
  }
  std::string out = "type    class   ";
  char buf[128];
  for (Isa isa : isas) {
    std::snprintf(buf, sizeof buf, " %-30s", IsaName(isa));
    out += buf;
  }
  out += "\n";
  for (DType t : ComputableDTypes()) {
    for (int c = 0; c < kRowClasses; ++c) {
      std::snprintf(buf, sizeof buf, "%-7s %-8s", DTypeName(t), RowClassName(RowClass(c)));
      out += buf;
      for (Isa isa : isas) {
        // "packed row | row without a packed copy" where they differ.
        const MatMulKernel* with = FindKernel(t, isa, RowClass(c), true);
        const MatMulKernel* without = FindKernel(t, isa, RowClass(c), false);
        std::string cell = with ? with->name : "-";
        if (without != with) cell += std::string(" | ") + (without ? without->name : "-");
        std::snprintf(buf, sizeof buf, " %-30s", cell.c_str());
        out += buf;
      }
      while (!out.empty() && out.back() == ' ') out.pop_back();
      out += "\n";
    }
  }
  return out;
}

}  // namespace stet::kernels
