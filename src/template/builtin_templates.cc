// The built-in templates' table and the rule that picks one for a model file
// without a template. The rule looks at chat tokens first (they say how the
// model was trained to read a conversation), then the architecture, then the
// name: a Llama-architecture SentencePiece file may be Llama 2, Mistral v0.x
// or something else entirely, and only its name tells them apart.
#include "template/builtin_templates.h"

#include <algorithm>
#include <cctype>

#include "base/check.h"

namespace stet {

namespace {

struct Meta {
  const char* name;
  const char* families;
  const char* end_of_turn;
};

constexpr Meta kMeta[] = {
    {"chatml", "any other model (ChatML turns)", "<|im_end|>"},
    {"gemma", "Gemma 2 and 3", "<end_of_turn>"},
    {"llama2", "Llama 2 Chat", "</s>"},
    {"llama3", "Llama 3, 3.1, 3.2, 3.3", "<|eot_id|>"},
    {"mistral", "Mistral and Mixtral Instruct", "</s>"},
    {"phi3", "Phi-3 and Phi-3.5", "<|end|>"},
    {"qwen", "Qwen 2, 2.5 and 3 (ChatML, Hermes tool calls)", "<|im_end|>"},
};

std::vector<BuiltinTemplate> MakeTable() {
  std::vector<BuiltinTemplate> out;
  for (const Meta& m : kMeta) {
    const builtin::EmbeddedTemplate* e = nullptr;
    for (size_t i = 0; i < builtin::kEmbeddedCount; ++i) {
      if (std::string_view(builtin::kEmbedded[i].name) == m.name) e = &builtin::kEmbedded[i];
    }
    STET_CHECK(e != nullptr);  // src/template/CMakeLists.txt embeds every name listed here
    out.push_back({m.name, m.families, e->source, m.end_of_turn});
  }
  return out;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Lower case, letters and digits only: "LLaMA v2" -> "llamav2", "Mistral-7B" -> "mistral7b".
std::string Squeeze(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

BuiltinChoice Pick(const char* name, std::string reason) {
  return {FindBuiltinTemplate(name), std::move(reason)};
}

}  // namespace

const std::vector<BuiltinTemplate>& BuiltinTemplates() {
  static const auto* table = new std::vector<BuiltinTemplate>(MakeTable());
  return *table;
}

const BuiltinTemplate* FindBuiltinTemplate(std::string_view name) {
  for (const BuiltinTemplate& t : BuiltinTemplates()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

BuiltinChoice ChooseBuiltinTemplate(const ModelTraits& traits) {
  const auto has = [&traits](std::string_view t) {
    return traits.has_token && traits.has_token(t);
  };
  const std::string& arch = traits.architecture;
  if (has("<start_of_turn>") && has("<end_of_turn>"))
    return Pick("gemma", "tokens <start_of_turn>");
  if (has("<|start_header_id|>") && has("<|eot_id|>"))
    return Pick("llama3", "tokens <|start_header_id|>, <|eot_id|>");
  if (has("<|im_start|>") && has("<tool_call>"))
    return Pick("qwen", "tokens <|im_start|>, <tool_call>");
  if (has("<|user|>") && has("<|assistant|>") && has("<|end|>"))
    return Pick("phi3", "tokens <|user|>, <|assistant|>, <|end|>");
  if (has("[INST]") && has("[/INST]")) return Pick("mistral", "tokens [INST], [/INST]");
  if (StartsWith(arch, "gemma")) return Pick("gemma", "architecture " + arch);
  if (StartsWith(arch, "qwen")) return Pick("qwen", "architecture " + arch);
  if (arch == "phi3") return Pick("phi3", "architecture " + arch);
  if (StartsWith(arch, "mistral")) return Pick("mistral", "architecture " + arch);
  if (arch == "llama" && traits.tokenizer_model == "llama") {
    const std::string name = Squeeze(traits.name);
    if (name.find("mistral") != std::string::npos || name.find("mixtral") != std::string::npos)
      return Pick("mistral", "architecture llama, SentencePiece, named '" + traits.name + "'");
    if (name.find("llama2") != std::string::npos || name.find("llamav2") != std::string::npos)
      return Pick("llama2", "architecture llama, SentencePiece, named '" + traits.name + "'");
  }
  return Pick("chatml", arch.empty() ? std::string("no family recognised")
                                     : "no family recognised for architecture " + arch);
}

}  // namespace stet
