#include "engine/fingerprint.h"

#include "base/hash.h"

namespace stet {

std::string FingerprintDescriptor(const FingerprintInputs& in) {
  return "stet-v1:model=" + in.model_sha256 + ";numerics=" + std::to_string(kNumericsVersion) +
         ";kv=" + DTypeName(in.kv_type) + ";mode=" + NumericsModeName(in.mode) +
         (in.weights_sha256.empty() ? "" : ";weights=" + in.weights_sha256);
}

std::string Fingerprint(const FingerprintInputs& in) {
  const std::string d = FingerprintDescriptor(in);
  std::string fp = "fp_" + Sha256Hex(d.data(), d.size()).substr(0, 12);
  if (in.mode != NumericsMode::kInvariant) fp += std::string("-") + NumericsModeName(in.mode);
  return fp;
}

}  // namespace stet
