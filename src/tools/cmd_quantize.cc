#include "tools/cmd_quantize.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "model/quantize_model.h"
#include "tools/common.h"

namespace stet::tools {

namespace {
struct QuantizeArgs {
  std::string model, out, type;
};

void QuantizeOptions(CLI::App* cmd, QuantizeArgs* a) {
  cmd->description("Re-encode a GGUF model's weight matrices in another type (norms stay float)");
  cmd->add_option("-m,--model", a->model, "Input GGUF model")->required();
  cmd->add_option("-o,--output", a->out, "Output GGUF file")->required();
  cmd->add_option("--type", a->type,
                  "Weight type: " + QuantRecipeList() +
                      " (q4_k_m/q5_k_m: llama.cpp's mixes, q6_k for the output matrix and "
                      "some layers' attn_v/ffn_down)")
      ->required();
}

int RunQuantize(const QuantizeArgs& a) {
  // Every type stet computes with is a target (its quantizer is numerics/quantize.h's),
  // and the llama.cpp-style _m mixes of them.
  auto recipe = ParseQuantRecipe(a.type);
  if (!recipe.ok()) return ReportError(recipe.status());
  auto r = QuantizeModel(a.model, a.out, *recipe, true);
  if (!r.ok()) return ReportError(r.status());
  std::fprintf(stderr,
               "stet: wrote %s: %d tensors as %s, %d in a fallback type (row length), %d "
               "unchanged\n",
               a.out.c_str(), r->quantized, a.type.c_str(), r->fallback, r->kept);
  return kExitOk;
}
}  // namespace

CLI::App* AddQuantizeCommand(CLI::App& app, int* exit_code) {
  return AddCommand(app, exit_code, "quantize", QuantizeOptions, RunQuantize);
}

}  // namespace stet::tools
