// Random ids: a thread-local mt19937_64 per thread, so id generation takes no lock.
#include "base/random_id.h"

#include <random>

namespace stet {

uint64_t RandomU64() {
  thread_local std::mt19937_64 gen([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }());
  return gen();
}

std::string RandomHex(int n) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  while (static_cast<int>(s.size()) < n) {
    uint64_t v = RandomU64();
    for (int i = 0; i < 16 && static_cast<int>(s.size()) < n; ++i, v >>= 4) s += kHex[v & 15];
  }
  return s;
}

}  // namespace stet
