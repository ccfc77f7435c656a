#include "model/arch.h"

namespace stet {

const ArchSpec* FindArch(std::string_view name) {
  for (const ArchSpec* a : {&LlamaArch(), &Qwen2Arch(), &Qwen3Arch(), &Gemma3Arch()}) {
    if (name == a->name) return a;
  }
  return nullptr;
}

std::string SupportedArchList() {
  std::string s;
  for (const ArchSpec* a : {&LlamaArch(), &Qwen2Arch(), &Qwen3Arch(), &Gemma3Arch()}) {
    if (!s.empty()) s += ", ";
    s += a->name;
  }
  return s;
}

}  // namespace stet
