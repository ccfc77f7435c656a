// Ids that must not repeat across requests (response, exchange and canary ids):
// random, never derived from a request and never part of any output the
// determinism promise covers, so they may use a nondeterministic generator.
#pragma once

#include <cstdint>
#include <string>

namespace stet {

// The calling thread's own generator, seeded once from std::random_device.
uint64_t RandomU64();
// n lowercase hex digits from RandomU64.
std::string RandomHex(int n);

}  // namespace stet
