// Google Benchmark of the sampler's full-vocabulary scans on one 262144-float
// row (Gemma 3's vocabulary): Sampler::Pick (greedy: argmax, then the chosen
// token's logprob from the row's log-sum-exp), and the kernels under it,
// kernels::Argmax and kernels::SumExpShifted. The row is synthetic logits
// (N(0, 3) plus a few spikes) unless STET_BENCH_LOGITS names a file of raw
// float32 rows (say, dumped from a model with RequestParams::return_logits);
// its first 262144 floats are used. SumExpShifted's speed depends on the values
// (how many exps are below the last bit of the running sum), so real rows tell more.
//   STET_ISA=avx2 build/bin/stet_sampler_bench
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "engine/sampler.h"
#include "kernels/kernels.h"

namespace {

constexpr int kVocab = 262144;

std::vector<float> Row() {
  std::vector<float> x(kVocab);
  if (const char* path = std::getenv("STET_BENCH_LOGITS")) {
    FILE* f = std::fopen(path, "rb");
    if (f && std::fread(x.data(), sizeof(float), x.size(), f) == x.size()) {
      std::fclose(f);
      return x;
    }
    std::fprintf(stderr, "STET_BENCH_LOGITS: cannot read %d floats from %s\n", kVocab, path);
    std::exit(1);
  }
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 3.0f);
  for (float& v : x) v = g(rng);
  for (int i = 0; i < kVocab; i += 9973) x[i] += 15.0f;
  return x;
}

const std::vector<float>& TheRow() {
  static const std::vector<float> row = Row();
  return row;
}

void BM_PickGreedy(benchmark::State& state) {
  const auto& x = TheRow();
  stet::Sampler sampler(stet::DefaultIsa());  // STET_ISA=scalar|avx2 picks another path
  stet::SamplingParams p;
  p.temperature = 0.0f;
  for (auto _ : state) {
    auto pick = sampler.Pick(x.data(), kVocab, p, {}, 0, 0, 0);
    benchmark::DoNotOptimize(pick);
  }
  state.SetLabel(stet::IsaName(stet::DefaultIsa()));
}
BENCHMARK(BM_PickGreedy)->Unit(benchmark::kMicrosecond);

void BM_Argmax(benchmark::State& state) {
  const auto& x = TheRow();
  for (auto _ : state)
    benchmark::DoNotOptimize(stet::kernels::Argmax(x.data(), kVocab, stet::DefaultIsa()));
  state.SetLabel(stet::IsaName(stet::DefaultIsa()));
}
BENCHMARK(BM_Argmax)->Unit(benchmark::kMicrosecond);

void BM_SumExpShifted(benchmark::State& state) {
  const auto& x = TheRow();
  const float mx = x[stet::kernels::Argmax(x.data(), kVocab, stet::Isa::kScalar)];
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        stet::kernels::SumExpShifted(x.data(), kVocab, mx, stet::DefaultIsa()));
  }
  state.SetLabel(stet::IsaName(stet::DefaultIsa()));
}
BENCHMARK(BM_SumExpShifted)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
