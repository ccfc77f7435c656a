// Which SIMD paths this CPU can run. The choice of path never changes results
// (numerics rule R4): every path is bitwise equal to the scalar reference.
#pragma once

namespace stet {

enum class Isa { kScalar = 0, kAvx2 = 1 };

bool CpuHasAvx2Fma();       // AVX2 + FMA + F16C
const char* IsaName(Isa isa);
Isa BestIsa();              // the fastest path this CPU supports
// The path kernels use when not told otherwise; STET_ISA=scalar|avx2 overrides.
Isa DefaultIsa();

}  // namespace stet
