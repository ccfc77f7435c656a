// stet_fidelity_score: teacher-forced logits of token sequences, for the
// fidelity bench (bench/fidelity/run.py compares them with a float64 forward).
// Each input line is one sequence of token ids; the float32 logits of every
// position (n x n_vocab, row after row, sequence after sequence) go to OUT.
// One Forward over the whole sequence: by R1-R3 these are the bits the engine
// computes for the same tokens in any batch, chunking or cache state.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "model/forward.h"
#include "model/paged_kv.h"

namespace stet {
namespace {

constexpr const char* kUsage =
    "usage: stet_fidelity_score MODEL.gguf IDS_FILE OUT.f32 [--kv f16|f32] [--threads N]\n"
    "                           [--numerics invariant|fast|precise|adaptive]\n"
    "IDS_FILE: one sequence of token ids per line (space-separated). OUT: the float32\n"
    "logits of every position of every sequence, in order. ISA: STET_ISA, else the best.\n";

int Fail(const std::string& msg) {
  std::fprintf(stderr, "stet_fidelity_score: %s\n", msg.c_str());
  return 1;
}

int Main(int argc, char** argv) {
  if (argc < 4) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  DType kv_type = DType::kF16;
  NumericsMode mode = NumericsMode::kInvariant;
  int threads = 2;
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--kv" && (v == "f16" || v == "f32")) {
      kv_type = v == "f16" ? DType::kF16 : DType::kF32;
    } else if (a == "--threads") {
      threads = std::max(1, std::atoi(v.c_str()));
    } else if (a == "--numerics" && NumericsFromName(v)) {
      mode = *NumericsFromName(v);
    } else {
      std::fprintf(stderr, "stet_fidelity_score: bad option '%s %s'\n%s", a.c_str(), v.c_str(),
                   kUsage);
      return 2;
    }
  }
  auto model = Model::Load(argv[1]);
  if (!model.ok()) return Fail(model.status().ToString());
  const HParams& hp = (*model)->hparams();
  std::ifstream in(argv[2]);
  if (!in) return Fail(std::string("cannot read ") + argv[2]);
  FILE* out = std::fopen(argv[3], "wb");
  if (!out) return Fail(std::string("cannot write ") + argv[3]);
  ThreadPool pool(threads);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<BatchToken> batch;
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) {
      if (id < 0 || id >= hp.n_vocab) return Fail("token id out of the vocabulary: " + line);
      batch.push_back({id, static_cast<int32_t>(batch.size()), 0, true});
    }
    if (batch.empty()) continue;
    const int n = static_cast<int>(batch.size());
    Forward fwd(**model, &pool, DefaultIsa(), n, mode);
    PagedKvCache kv = PagedKvCache::Contiguous(hp, 1, n, kv_type);
    std::vector<float> logits;
    Status st = fwd.Run(batch, kv, &logits);
    if (!st.ok()) return Fail(st.ToString());
    if (std::fwrite(logits.data(), sizeof(float), logits.size(), out) != logits.size())
      return Fail("short write");
  }
  return std::fclose(out) == 0 ? 0 : Fail("close failed");
}

}  // namespace
}  // namespace stet

int main(int argc, char** argv) { return stet::Main(argc, argv); }
