// Which SIMD paths this CPU can run. The choice of path never changes results
// (numerics rule R4): every path is bitwise equal to the scalar reference.
#pragma once

namespace stet {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kNeon = 3 };

bool CpuHasAvx2Fma();  // AVX2 + FMA + F16C
bool CpuHasAvx512();   // the above + AVX-512 F/BW/DQ/VL/VNNI, ZMM state saved by the OS
bool CpuHasNeon();     // aarch64 Advanced SIMD (every aarch64 CPU); false elsewhere
bool CpuHasDotProd();  // aarch64 SDOT/UDOT (ARMv8.2 dotprod: Apple M1+, Graviton 2+, Cortex-A55+)
const char* IsaName(Isa isa);
Isa BestIsa();  // the fastest path this CPU supports
// The path kernels use when not told otherwise; STET_ISA=scalar|avx2|neon overrides
// (a path this CPU lacks falls back to the best one it has).
Isa DefaultIsa();

}  // namespace stet
