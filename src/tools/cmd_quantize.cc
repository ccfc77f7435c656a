#include "tools/cmd_quantize.h"

#include <cstdio>
#include <memory>

#include "model/quantize_model.h"
#include "numerics/dtype.h"
#include "tools/common.h"

namespace stet::tools {

namespace {
struct QuantizeArgs {
  std::string model, out, type;
};

int RunQuantize(const QuantizeArgs& a) {
  // Every type stet computes with is a target (its quantizer is numerics/quantize.h's).
  DType t = DType::kF32;
  bool known = false;
  for (uint32_t id = 0; id < 64 && !known; ++id) {
    const auto tr = GetDTypeTraits(id);
    if (tr && DTypeSupported(static_cast<DType>(id)) && a.type == tr->name) {
      t = static_cast<DType>(id);
      known = true;
    }
  }
  if (!known) {
    return ReportError(
        InvalidArgument("unknown --type '" + a.type + "' (use " + SupportedDTypeList() + ")"));
  }
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
  cmd->add_option("--type", a->type, SupportedDTypeList())->required();
  cmd->callback([a, exit_code] { *exit_code = RunQuantize(*a); });
  return cmd;
}

}  // namespace stet::tools
