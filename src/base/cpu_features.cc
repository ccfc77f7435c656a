#include "base/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace stet {

bool CpuHasAvx2Fma() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
  }
  return "unknown";
}

Isa BestIsa() { return CpuHasAvx2Fma() ? Isa::kAvx2 : Isa::kScalar; }

Isa DefaultIsa() {
  static const Isa isa = [] {
    const char* env = std::getenv("STET_ISA");
    if (env && std::strcmp(env, "scalar") == 0) return Isa::kScalar;
    return BestIsa();
  }();
  return isa;
}

}  // namespace stet
