// The system fingerprint (rule R9): everything that can change result bits —
// model content (SHA-256), numerics version, KV storage type, numerics mode —
// hashed into one short string. Equal fingerprint + equal request (seed
// included) => equal bytes; a mismatch is a bug a test should catch.
#pragma once

#include <string>

#include "kernels/adaptive.h"
#include "numerics/dtype.h"

namespace stet {

// Bump when any kernel's result bits may change (docs/numerics.md).
constexpr int kNumericsVersion = 2;

struct FingerprintInputs {
  std::string model_sha256;
  // Model::WeightsDigest: "" while the weights are the file's; after
  // Engine::LoadWeights, the SHA-256 of what they are now.
  std::string weights_sha256;
  DType kv_type = DType::kF16;
  NumericsMode mode = NumericsMode::kInvariant;
};

// "stet-v1:model=<sha256>;numerics=1;kv=f16;mode=invariant", and ";weights=<sha256>" after
// Engine::LoadWeights changed them
std::string FingerprintDescriptor(const FingerprintInputs& in);
// "fp_" + 12 hex digits of SHA-256(descriptor); adaptive mode ends in "-adaptive".
std::string Fingerprint(const FingerprintInputs& in);

}  // namespace stet
