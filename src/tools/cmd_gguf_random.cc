// `stet gguf-random`: a thin front end over model/random_model.h. Bad --shape,
// --type or --layers values are command-line errors (exit 2); a failed write is
// exit 1.
#include "tools/cmd_gguf_random.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "model/random_model.h"
#include "tools/common.h"

namespace stet::tools {

namespace {

struct GgufRandomArgs {
  std::string shape;
  std::string type = "q4_1";
  uint64_t seed = 1;
  std::string output;
  int layers = 0;
  int threads = 0;
  bool quiet = false;
};

void GgufRandomOptions(CLI::App* cmd, GgufRandomArgs* a) {
  cmd->description(
      "Write a GGUF with random weights and a real model's exact shape (hyper-parameters, "
      "tensor names and shapes, a synthetic byte-level BPE vocabulary of the right size), for "
      "speed tests. Weights ~ N(0, 0.02^2), norms ~ 1; the bytes depend only on shape, type, "
      "seed and layers. Types follow llama.cpp's quantizer: norms and biases f32; the tied "
      "embedding/output q6_k for quantized types (q8_0 for --type q8_0 or when n_embd % 256 != "
      "0). Super-block types (q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs) need K % 256 == 0: a "
      "matrix whose K is not (e.g. 576 in smollm2-135m) is stored as q8_0 instead (llama.cpp "
      "would use q5_0/q5_1/iq4_nl); general.name records how many. The mixes q4_k_m and "
      "q5_k_m follow llama.cpp's rule (q6_k output, attn_v and ffn_down in some layers) and "
      "its fallbacks, written directly (no f16 copy first).");
  cmd->add_option("--shape", a->shape, "Model shape: " + RandomModelShapeList())->required();
  cmd->add_option("--type", a->type, "Weight type: " + RandomModelTypeList())
      ->capture_default_str();
  cmd->add_option("-s,--seed", a->seed, "Seed of the weights")->capture_default_str();
  cmd->add_option("-o,--output", a->output, "Output GGUF file")->required();
  cmd->add_option("--layers", a->layers, "Keep only the first N layers (0: all)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "Threads (0: all cores); never changes the bytes")
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", a->quiet, "No summary on stderr");
}

int RunGgufRandom(const GgufRandomArgs& a) {
  auto usage = [](const std::string& msg) {
    std::fprintf(stderr, "stet: error: %s\n", msg.c_str());
    return kExitUsage;
  };
  if (!FindRandomModelShape(a.shape)) {
    return usage("unknown --shape '" + a.shape + "' (expected one of: " + RandomModelShapeList() +
                 ")");
  }
  RandomModelOptions o;
  if (Status t = SetRandomModelType(a.type, &o); !t.ok()) return usage("--type: " + t.message());
  const RandomModelShape& shape = *FindRandomModelShape(a.shape);
  if (a.layers < 0 || a.layers > shape.n_layer) {
    return usage("--layers must be in [1, " + std::to_string(shape.n_layer) + "] for " + a.shape);
  }
  o.shape = a.shape;
  o.seed = a.seed;
  o.n_layers = a.layers;
  o.n_threads = ThreadsOrAllCores(a.threads);
  RandomModelSummary s;
  Status st = WriteRandomModel(o, a.output, &s);
  if (!st.ok()) return ReportError(st);
  if (!a.quiet) {
    std::fprintf(stderr, "stet: wrote %s: %s, %d layers, %.1f MiB of tensors\n", a.output.c_str(),
                 s.name.c_str(), s.n_layer, s.tensor_bytes / 1048576.0);
  }
  return kExitOk;
}

}  // namespace

CLI::App* AddGgufRandomCommand(CLI::App& app, int* exit_code) {
  return AddCommand(app, exit_code, "gguf-random", GgufRandomOptions, RunGgufRandom);
}

}  // namespace stet::tools
