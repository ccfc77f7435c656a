#include "tools/cmd_fingerprint.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "base/hash.h"
#include "engine/fingerprint.h"
#include "tools/common.h"
#include "tools/model_catalog.h"

namespace stet::tools {

namespace {
struct FingerprintArgs {
  std::string model;
  std::string kv_type = "f16";
  std::string numerics = "invariant";
  bool verbose = false;
};

int RunFingerprint(const FingerprintArgs& a) {
  FingerprintInputs in;
  if (a.kv_type == "f16")
    in.kv_type = DType::kF16;
  else if (a.kv_type == "f32")
    in.kv_type = DType::kF32;
  else
    return ReportError(InvalidArgument("--kv-type must be f16 or f32"));
  if (a.numerics == "invariant")
    in.mode = NumericsMode::kInvariant;
  else if (a.numerics == "adaptive")
    in.mode = NumericsMode::kAdaptive;
  else
    return ReportError(InvalidArgument("--numerics must be invariant or adaptive"));
  auto sha = Sha256File(a.model);
  if (!sha.ok()) return ReportError(sha.status());
  in.model_sha256 = *sha;
  std::printf("%s\n", Fingerprint(in).c_str());
  if (a.verbose) std::printf("%s\n", FingerprintDescriptor(in).c_str());
  return kExitOk;
}
}  // namespace

CLI::App* AddFingerprintCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<FingerprintArgs>();
  a->model = DefaultModelPath();
  CLI::App* cmd = app.add_subcommand(
      "fingerprint",
      "Print the system_fingerprint that `stet serve` reports for this model and settings: "
      "equal fingerprints and equal requests give equal bytes");
  cmd->add_option("-m,--model", a->model, "GGUF model file, or a pulled model name (stet list)")
      ->capture_default_str();
  cmd->add_option("--kv-type", a->kv_type, "KV cache storage: f16 or f32")->capture_default_str();
  cmd->add_option("--numerics", a->numerics, "invariant or adaptive")->capture_default_str();
  cmd->add_flag("-v,--verbose", a->verbose, "Also print what the fingerprint hashes");
  cmd->callback([a, exit_code] {
    if (ResolveModelOrReport(&a->model, exit_code)) *exit_code = RunFingerprint(*a);
  });
  return cmd;
}

}  // namespace stet::tools
