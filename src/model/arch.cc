#include "model/arch.h"

#include <vector>

namespace stet {

namespace {

const std::vector<const ArchSpec*>& AllArchs() {
  static const std::vector<const ArchSpec*> all = {&LlamaArch(),  &Qwen2Arch(),    &Qwen3Arch(),
                                                   &Gemma3Arch(), &Qwen3MoeArch(), &Phi3Arch(),
                                                   &Gemma2Arch()};
  return all;
}

}  // namespace

const ArchSpec* FindArch(std::string_view name) {
  for (const ArchSpec* a : AllArchs()) {
    if (name == a->name) return a;
  }
  return nullptr;
}

std::string SupportedArchList() {
  std::string s;
  for (const ArchSpec* a : AllArchs()) {
    if (!s.empty()) s += ", ";
    s += a->name;
  }
  return s;
}

}  // namespace stet
