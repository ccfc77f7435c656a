// Content hashes. SHA-256 names model files in the fingerprint (rule R9);
// FNV-1a-64 is a cheap, stable hash for logit vectors (`--logits-hash`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace stet {

std::string Sha256Hex(const void* data, size_t size);
Result<std::string> Sha256File(const std::string& path);
uint64_t Fnv1a64(const void* data, size_t size, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace stet
