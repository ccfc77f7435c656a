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
  std::string kv_type = "auto";
  std::string numerics = "invariant";
  bool verbose = false;
};

void FingerprintOptions(CLI::App* cmd, FingerprintArgs* a) {
  cmd->description(
      "Print the system_fingerprint that `stet serve` reports for this model and settings: "
      "equal fingerprints and equal requests give equal bytes");
  AddModelOption(cmd, &a->model);
  AddNumericsOptions(cmd, &a->numerics, &a->kv_type);
  cmd->add_flag("-v,--verbose", a->verbose, "Also print what the fingerprint hashes");
}

int RunFingerprint(const FingerprintArgs& a) {
  FingerprintInputs in;
  auto numerics = ParseNumericsChoice(a.numerics, a.kv_type);
  if (!numerics.ok()) {
    std::fprintf(stderr, "stet: error: %s\n", numerics.status().message().c_str());
    return kExitUsage;
  }
  in.kv_type = numerics->kv_type;
  in.mode = numerics->mode;
  auto sha = Sha256File(a.model);
  if (!sha.ok()) return ReportError(sha.status());
  in.model_sha256 = *sha;
  std::printf("%s\n", Fingerprint(in).c_str());
  if (a.verbose) std::printf("%s\n", FingerprintDescriptor(in).c_str());
  return kExitOk;
}
}  // namespace

CLI::App* AddFingerprintCommand(CLI::App& app, int* exit_code) {
  return AddCommand(app, exit_code, "fingerprint", FingerprintOptions, WithModels(RunFingerprint));
}

}  // namespace stet::tools
