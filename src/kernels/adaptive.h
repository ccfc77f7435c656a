// The adaptive (batch-variant) numerics mode, rule R8: what ordinary engines
// do, kept in the same binary so the price of invariance can be measured and
// its absence demonstrated. It is the ONLY code allowed to break R1–R2, and a
// fingerprint that uses it says "adaptive".
//
// MatMulAdaptive picks its reduction strategy from the batch shape, as common
// CPU/GPU libraries and their autotuners do: below kAdaptiveSplitRows rows it
// splits K into a number of chunks that depends on the row count and the
// thread count (threads x (1 + m % 3)), computes the chunks in parallel and
// adds the partial sums (split-K); from there on it uses the
// canonical kernel (the "large GEMM" path). A request's logits therefore change
// with what it is batched with.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/kernels.h"

namespace stet {

enum class NumericsMode { kInvariant, kAdaptive, kFast, kPrecise };
const char* NumericsModeName(NumericsMode m);
// The mode named `name` (as NumericsModeName writes it), or nullopt.
std::optional<NumericsMode> NumericsFromName(std::string_view name);

namespace kernels {

constexpr int64_t kAdaptiveSplitRows = 64;

void MatMulAdaptive(const WeightView& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                    Isa isa);

}  // namespace kernels
}  // namespace stet
