#include "base/cpu_features.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif
#if defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#include "base/enum_names.h"

namespace stet {

namespace {

constexpr EnumName<Isa> kIsaNames[] = {{Isa::kScalar, "scalar"},
                                       {Isa::kAvx2, "avx2"},
                                       {Isa::kAvx512, "avx512"},
                                       {Isa::kNeon, "neon"},
                                       {Isa::kAuto, "auto"}};

#if defined(__x86_64__) || defined(__i386__)
bool QueryAvx2Fma() {
  // CPUID directly (clang 14 lacks __builtin_cpu_supports("f16c")).
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const bool fma = ecx & (1u << 12), osxsave = ecx & (1u << 27), avx = ecx & (1u << 28),
             f16c = ecx & (1u << 29);
  if (!(fma && osxsave && avx && f16c)) return false;
  // The OS must save the YMM state (XCR0 bits 1 and 2).
  unsigned xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 6u) != 6u) return false;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return ebx & (1u << 5);  // AVX2
}

// STET_MAX_ISA=scalar|avx2 caps what the x86 queries below report, so a machine
// with AVX-512 runs as one without it (or without AVX2) would: the kernel table,
// --isa auto's measured plan and the tests see only the paths such a CPU has
// (the convention of oneDNN's ONEDNN_MAX_CPU_ISA). Unset, avx512 or anything
// else: no cap (an unknown value is reported once on stderr).
Isa MaxIsa() {
  static const Isa cap = [] {
    const char* env = std::getenv("STET_MAX_ISA");
    if (env == nullptr || *env == '\0') return Isa::kAvx512;
    const std::optional<Isa> isa = ValueOf(kIsaNames, env);
    if (isa == Isa::kScalar || isa == Isa::kAvx2 || isa == Isa::kAvx512) return *isa;
    std::fprintf(stderr, "stet: STET_MAX_ISA='%s' ignored (scalar, avx2 or avx512)\n", env);
    return Isa::kAvx512;
  }();
  return cap;
}
#endif

}  // namespace

// Asked once: kernel dispatch asks per MatMul, and under a hypervisor every CPUID
// traps to it (microseconds each: ~1% of a decode step when asked per call).
bool CpuHasAvx2Fma() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool ok = MaxIsa() != Isa::kScalar && QueryAvx2Fma();
  return ok;
#else
  return false;
#endif
}

bool CpuHasAvx512() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool ok = [] {
    if (!CpuHasAvx2Fma() || MaxIsa() != Isa::kAvx512) return false;
    unsigned eax, ebx, ecx, edx;
    // The OS must save the opmask and ZMM state too (XCR0 bits 5, 6, 7).
    unsigned xcr0_lo, xcr0_hi;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 0xE6u) != 0xE6u) return false;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    const bool f = ebx & (1u << 16), dq = ebx & (1u << 17), bw = ebx & (1u << 30),
               vl = ebx & (1u << 31), vnni = ecx & (1u << 11);
    return f && dq && bw && vl && vnni;
  }();
  return ok;
#else
  return false;
#endif
}

const char* MaxIsaCap() {
#if defined(__x86_64__) || defined(__i386__)
  if (MaxIsa() != Isa::kAvx512) return IsaName(MaxIsa());
#endif
  return nullptr;
}

bool CpuHasNeon() {
#if defined(__aarch64__)
  return true;  // Advanced SIMD is mandatory in AArch64
#else
  return false;
#endif
}

bool CpuHasDotProd() {
#if defined(__aarch64__) && defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#elif defined(__aarch64__) && defined(__APPLE__)
  int v = 0;
  size_t len = sizeof(v);
  return sysctlbyname("hw.optional.arm.FEAT_DotProd", &v, &len, nullptr, 0) == 0 && v != 0;
#else
  return false;
#endif
}

const char* IsaName(Isa isa) { return NameOf(kIsaNames, isa, "unknown"); }

Isa BestIsa() {
  if (CpuHasNeon()) return Isa::kNeon;
  if (CpuHasAvx512()) return Isa::kAvx512;
  return CpuHasAvx2Fma() ? Isa::kAvx2 : Isa::kScalar;
}

Isa ResolveIsa(Isa isa) { return isa == Isa::kAuto ? BestIsa() : isa; }

Isa DefaultIsa() {
  static const Isa isa = [] {
    const char* env = std::getenv("STET_ISA");
    if (env && std::strcmp(env, "scalar") == 0) return Isa::kScalar;
    if (env && std::strcmp(env, "avx2") == 0 && CpuHasAvx2Fma()) return Isa::kAvx2;
    if (env && std::strcmp(env, "avx512") == 0 && CpuHasAvx512()) return Isa::kAvx512;
    if (env && std::strcmp(env, "neon") == 0 && CpuHasNeon()) return Isa::kNeon;
    if (env && std::strcmp(env, "auto") == 0) return Isa::kAuto;
    return BestIsa();
  }();
  return isa;
}

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, arm;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t v = line.find_first_not_of(" \t", colon + 1);
    const std::string value = v == std::string::npos ? "" : line.substr(v);
    if (line.rfind("model name", 0) == 0) return value;
    // aarch64 Linux names the core by implementer and part numbers.
    if (line.rfind("CPU implementer", 0) == 0 && arm.empty()) arm = "implementer " + value;
    if (line.rfind("CPU part", 0) == 0 && arm.find("part") == std::string::npos) {
      arm += " part " + value;
    }
  }
  return arm.empty() ? "unknown" : arm;
}

}  // namespace stet
