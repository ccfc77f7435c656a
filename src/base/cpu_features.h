// Which SIMD paths this CPU can run. The choice of path never changes results
// (numerics rule R4): every path is bitwise equal to the scalar reference.
#pragma once

#include <string>

namespace stet {

// kAuto: every kernel's fastest path on this CPU — MatMul's rows as a plan chosen
// by measurement (kernels/matmul_tune.h), the other ops the best ISA's. Since every
// path computes the same bits, choosing by measurement changes speed only.
enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kNeon = 3, kAuto = 4 };

// On x86, STET_MAX_ISA=avx2 (or scalar) makes the two below report what a CPU
// without AVX-512 (or without AVX2) would: every path choice follows.
bool CpuHasAvx2Fma();     // AVX2 + FMA + F16C
bool CpuHasAvx512();      // the above + AVX-512 F/BW/DQ/VL/VNNI, ZMM state saved by the OS
const char* MaxIsaCap();  // the cap STET_MAX_ISA puts on them ("avx2", "scalar"), or nullptr
bool CpuHasNeon();        // aarch64 Advanced SIMD (every aarch64 CPU); false elsewhere
bool CpuHasDotProd();  // aarch64 SDOT/UDOT (ARMv8.2 dotprod: Apple M1+, Graviton 2+, Cortex-A55+)
const char* IsaName(Isa isa);
Isa BestIsa();            // the fastest path this CPU supports
Isa ResolveIsa(Isa isa);  // kAuto -> BestIsa(), any other unchanged
// The path kernels use when not told otherwise; STET_ISA=scalar|avx2|avx512|neon|auto
// overrides (a path this CPU lacks falls back to the best one it has).
Isa DefaultIsa();
// The CPU's name as the OS reports it (x86 "model name"; elsewhere what is known).
std::string CpuModelName();

}  // namespace stet
