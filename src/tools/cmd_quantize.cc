#include "tools/cmd_quantize.h"

#include <cstdio>
#include <memory>

#include "model/quantize_model.h"
#include "tools/common.h"

namespace stet::tools {

namespace {
struct QuantizeArgs {
  std::string model, out, type;
};

int RunQuantize(const QuantizeArgs& a) {
  DType t;
  if (a.type == "f32") t = DType::kF32;
  else if (a.type == "f16") t = DType::kF16;
  else if (a.type == "bf16") t = DType::kBF16;
  else if (a.type == "q8_0") t = DType::kQ8_0;
  else if (a.type == "q4_0") t = DType::kQ4_0;
  else if (a.type == "q4_1") t = DType::kQ4_1;
  else if (a.type == "q4_k") t = DType::kQ4_K;
  else if (a.type == "q5_k") t = DType::kQ5_K;
  else if (a.type == "q6_k") t = DType::kQ6_K;
  else return ReportError(InvalidArgument("unknown --type '" + a.type + "' (use " + SupportedDTypeList() + ")"));
  auto r = QuantizeModel(a.model, a.out, t, true);
  if (!r.ok()) return ReportError(r.status());
  std::fprintf(stderr, "stet: wrote %s: %d tensors as %s, %d as q8_0 (row length), %d unchanged\n",
               a.out.c_str(), r->quantized, a.type.c_str(), r->fallback, r->kept);
  return kExitOk;
}
}  // namespace

CLI::App* AddQuantizeCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<QuantizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "Re-encode a GGUF model's weight matrices in another type (norms stay float)");
  cmd->add_option("-m,--model", a->model, "Input GGUF model")->required();
  cmd->add_option("-o,--output", a->out, "Output GGUF file")->required();
  cmd->add_option("--type", a->type, "f32, f16, bf16, q8_0, q4_0, q4_1, q4_k, q5_k, q6_k")->required();
  cmd->callback([a, exit_code] { *exit_code = RunQuantize(*a); });
  return cmd;
}

}  // namespace stet::tools
