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
    case Isa::kAuto:
      return true;
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
using Resolved =
    std::array<std::array<std::array<std::array<const MatMulKernel*, 2>, kRowClasses>, kIsas>,
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
    case RowClass::kBatch:
      return "batch";
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
  const auto id = static_cast<uint32_t>(t), i = static_cast<uint32_t>(ResolveIsa(isa));
  if (id >= kTypeIds || i >= kIsas) return nullptr;
  return Index()[id][i][static_cast<int>(c)][packed ? 1 : 0];
}

const MatMulKernel* MatMulPlan::Get(DType t, RowClass c) const {
  const auto id = static_cast<uint32_t>(t);
  return id < kTypeIds ? rows_[id][static_cast<int>(c)] : nullptr;
}

const MatMulKernel* MatMulPlan::Pick(DType t, RowClass c, bool packed) const {
  const MatMulKernel* k = Get(t, c);
  if (k == nullptr) return FindKernel(t, BestIsa(), c, packed);
  if (!packed && k->packed == Packed::kNeeds) return FindKernel(t, k->isa, c, false);
  return k;
}

void MatMulPlan::Set(DType t, RowClass c, const MatMulKernel* k) {
  const auto id = static_cast<uint32_t>(t);
  STET_CHECK(id < kTypeIds && (k == nullptr || (k->type == t && (k->classes & ClassBit(c)))));
  rows_[id][static_cast<int>(c)] = k;
}

bool MatMulPlan::empty() const {
  for (const auto& per_type : rows_) {
    for (const MatMulKernel* k : per_type) {
      if (k != nullptr) return false;
    }
  }
  return true;
}

namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// The row that `target` (an ISA or a kernel name) names for (t, c), or null.
const MatMulKernel* Target(const std::string& target, DType t, RowClass c) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (target == IsaName(isa)) return IsaRunsHere(isa) ? FindKernel(t, isa, c, true) : nullptr;
  }
  for (const MatMulKernel& k : Table()) {
    if (k.name == target && k.type == t && (k.classes & ClassBit(c)) != 0 && KernelRunsHere(k)) {
      return &k;
    }
  }
  return nullptr;
}

// One "[type.]class=target" item into *plan.
Status ParseItem(const std::string& item, MatMulPlan* plan) {
  const size_t eq = item.find('=');
  if (eq == std::string::npos) return InvalidArgument("kernel plan item '" + item + "': no '='");
  std::string key = Trim(item.substr(0, eq));
  const std::string target = Trim(item.substr(eq + 1));
  std::vector<DType> types = ComputableDTypes();
  const size_t dot = key.find('.');
  if (dot != std::string::npos) {
    const std::string type = key.substr(0, dot);
    key = key.substr(dot + 1);
    types.clear();
    for (DType t : ComputableDTypes()) {
      if (type == DTypeName(t)) types.push_back(t);
    }
    if (types.empty()) return InvalidArgument("kernel plan item '" + item + "': no type " + type);
  }
  std::vector<RowClass> classes;
  for (int c = 0; c < kRowClasses; ++c) {
    if (key == "*" || key == RowClassName(RowClass(c))) classes.push_back(RowClass(c));
  }
  if (classes.empty()) {
    return InvalidArgument("kernel plan item '" + item +
                           "': the class is decode, small, batch, prefill or *");
  }
  // A type named must be served; over all types, a kernel name sets those it serves.
  int set = 0;
  for (DType t : types) {
    for (RowClass c : classes) {
      const MatMulKernel* k = Target(target, t, c);
      if (k == nullptr && dot != std::string::npos) {
        return InvalidArgument("kernel plan item '" + item + "': '" + target + "' serves no " +
                               DTypeName(t) + " " + RowClassName(c) + " rows on this CPU");
      }
      if (k != nullptr) {
        plan->Set(t, c, k);
        ++set;
      }
    }
  }
  if (set == 0) {
    return InvalidArgument("kernel plan item '" + item + "': '" + target +
                           "' is no ISA or kernel that runs on this CPU");
  }
  return Status::Ok();
}

}  // namespace

Result<MatMulPlan> MatMulPlan::Parse(const std::string& spec) {
  MatMulPlan plan;
  std::string item;
  auto flush = [&]() -> Status {
    const std::string t = Trim(item);
    item.clear();
    return t.empty() ? Status::Ok() : ParseItem(t, &plan);
  };
  bool comment = false;
  for (char ch : spec) {
    if (ch == '\n') comment = false;
    if (ch == '#') comment = true;
    if (ch == ',' || ch == '\n') {
      STET_RETURN_IF_ERROR(flush());
    } else if (!comment) {
      item += ch;
    }
  }
  STET_RETURN_IF_ERROR(flush());
  return plan;
}

std::string MatMulPlan::ToString() const {
  std::string out;
  for (DType t : ComputableDTypes()) {
    for (int c = 0; c < kRowClasses; ++c) {
      const MatMulKernel* k = Get(t, RowClass(c));
      if (k == nullptr) continue;
      out += std::string(DTypeName(t)) + "." + RowClassName(RowClass(c)) + "=" + k->name + "\n";
    }
  }
  return out;
}

std::string DescribeKernelTable(const MatMulPlan* plan) {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (IsaRunsHere(isa)) isas.push_back(isa);
  }
  char buf[128];
  std::string out = "type    class   ";
  if (plan != nullptr) out += " auto (measured)       ";
  for (Isa isa : isas) {
    std::snprintf(buf, sizeof buf, " %-30s", IsaName(isa));
    out += buf;
  }
  out += "\n";
  for (DType t : ComputableDTypes()) {
    for (int c = 0; c < kRowClasses; ++c) {
      std::snprintf(buf, sizeof buf, "%-7s %-8s", DTypeName(t), RowClassName(RowClass(c)));
      out += buf;
      if (plan != nullptr) {
        const MatMulKernel* k = plan->Pick(t, RowClass(c), true);
        std::snprintf(buf, sizeof buf, " %-22s", k ? k->name : "-");
        out += buf;
      }
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
