// The chat templates stet ships for model files that carry none (as Ollama
// and llama.cpp do): one per family stet runs, each stet's own Jinja text
// (src/template/builtin/*.jinja, embedded at build time), chosen from the
// file's architecture, name and tokenizer. Invariant: the choice is a pure
// function of those traits, so the same file gets the same template (and the
// same template SHA-256 in records) on every machine and every run.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace stet {

struct BuiltinTemplate {
  std::string_view name;         // "gemma", "llama3", ... (the .jinja file's stem)
  std::string_view families;     // who it is for, in words ("Gemma 2 and 3")
  std::string_view source;       // the Jinja text
  std::string_view end_of_turn;  // the text that ends an answer ("<end_of_turn>")
};

// Every built-in, in a fixed order; FindBuiltinTemplate: by name, or null.
const std::vector<BuiltinTemplate>& BuiltinTemplates();
const BuiltinTemplate* FindBuiltinTemplate(std::string_view name);

// What the choice reads from a model file.
struct ModelTraits {
  std::string architecture;     // general.architecture ("llama", "gemma3", "qwen2", ...)
  std::string name;             // general.name and general.basename, as found
  std::string tokenizer_model;  // tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2"
  // Whether the vocabulary has this exact token text ("<start_of_turn>").
  std::function<bool(std::string_view)> has_token;
};

struct BuiltinChoice {
  const BuiltinTemplate* tmpl = nullptr;  // never null: "chatml" when nothing else fits
  std::string reason;                     // why, for the startup log ("architecture gemma3")
};

// The family's template: its chat tokens when the vocabulary has them
// (<start_of_turn>, <|start_header_id|>, <|im_start|> with <tool_call>,
// <|user|>/<|end|>, [INST]), else its architecture (gemma*, qwen*, phi3,
// mistral*), else, for a SentencePiece "llama" file, its name (Mistral, or
// Llama 2); anything else gets the ChatML fallback.
BuiltinChoice ChooseBuiltinTemplate(const ModelTraits& traits);

namespace builtin {
// Filled by the generated builtin_embedded.cc.
struct EmbeddedTemplate {
  const char* name;
  const char* source;
};
extern const EmbeddedTemplate kEmbedded[];
extern const size_t kEmbeddedCount;
}  // namespace builtin

}  // namespace stet
