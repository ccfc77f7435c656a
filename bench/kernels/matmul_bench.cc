// Google Benchmark of kernels::MatMul per weight type, shape and activation
// rows m: the decode (m = 1) and prefill (m = 64, 512) shapes of the bench
// models' matrices, on one thread or a pool. Reports GMAC/s and, for m = 1,
// the weight bytes streamed per second (decode is bandwidth-bound). For
// iterating on kernels; bench/run.py measures the engine against llama.cpp.
//   STET_ISA=avx2 build/bin/stet_matmul_bench --benchmark_filter='q4_k/.*m:1$' --threads 2
//   STET_KERNEL_PLAN='q4_k.prefill=avx2.vertical' build/bin/stet_matmul_bench ...  (one row)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/matmul_table.h"
#include "numerics/dtype.h"
#include "numerics/quantize.h"

namespace {

using stet::DType;
namespace kernels = stet::kernels;

stet::Isa g_isa = stet::DefaultIsa();  // STET_ISA=scalar|avx2|avx512 picks another
int g_threads = 1;
// STET_KERNEL_PLAN (the engine's syntax, e.g. "q4_k.prefill=avx2.vertical"): the
// rows it names serve their (type, class) under Isa::kAuto, the rest the best ISA's.
std::unique_ptr<kernels::MatMulPlan> g_plan;

// A random matrix in `type`, with its packed copy where this CPU's path reads one.
struct Matrix {
  std::vector<uint8_t> data;
  std::unique_ptr<uint8_t[]> packed_storage;
  kernels::WeightView view;
};

std::unique_ptr<Matrix> MakeMatrix(DType type, int64_t rows, int64_t cols) {
  auto m = std::make_unique<Matrix>();
  const int64_t row_bytes = stet::RowBytes(type, cols);
  m->data.resize(static_cast<size_t>(rows * row_bytes));
  // A few distinct random rows repeated: quantizing every row would dominate start-up.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(cols));
  constexpr int64_t kDistinct = 64;
  for (int64_t r = 0; r < rows; ++r) {
    if (r < kDistinct) {
      for (float& v : row) v = dist(rng);
      if (!stet::QuantizeRow(type, row.data(), cols, m->data.data() + r * row_bytes).ok())
        std::abort();
    } else {
      std::memcpy(m->data.data() + r * row_bytes, m->data.data() + (r % kDistinct) * row_bytes,
                  static_cast<size_t>(row_bytes));
    }
  }
  m->view = {type, rows, cols, m->data.data(), row_bytes};
  m->view.plan = g_plan.get();
  const int64_t pb = kernels::PackedBytes(m->view);
  // STET_NO_PACK=1 measures the unpacked kernels (as the model does with it).
  if (pb > 0 && kernels::PackedLayoutUsed(type) && std::getenv("STET_NO_PACK") == nullptr) {
    m->packed_storage.reset(new uint8_t[static_cast<size_t>(pb) + 64]);
    uint8_t* p = m->packed_storage.get();
    p += (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
    kernels::PackWeights(m->view, p);
    m->view.packed = p;
  }
  return m;
}

void BM_MatMul(benchmark::State& state, DType type, int64_t rows, int64_t cols) {
  const int64_t m = state.range(0);
  // Decode (and speculation's verification, m = k + 1) streams weights from
  // DRAM: for few rows, cycle through enough copies of the matrix (>= 256 MiB)
  // that none is still in the caches when read again.
  const int64_t bytes_one = rows * stet::RowBytes(type, cols);
  // STET_BENCH_HOT=1: one copy (cache-resident when small enough).
  const bool cold = m <= 16 && std::getenv("STET_BENCH_HOT") == nullptr;
  const int64_t copies = cold ? std::max<int64_t>(1, (int64_t{256} << 20) / bytes_one + 1) : 1;
  std::vector<std::unique_ptr<Matrix>> mats;
  for (int64_t c = 0; c < copies; ++c) mats.push_back(MakeMatrix(type, rows, cols));
  std::vector<float> x(static_cast<size_t>(m * cols)), y(static_cast<size_t>(m * rows));
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : x) v = dist(rng);
  std::unique_ptr<stet::ThreadPool> pool;
  if (g_threads > 1) pool = std::make_unique<stet::ThreadPool>(g_threads);
  size_t next = 0;
  for (auto _ : state) {
    kernels::MatMul(mats[next]->view, x.data(), m, y.data(), pool.get(), g_isa);
    benchmark::DoNotOptimize(y.data());
    next = (next + 1) % mats.size();
  }
  const double macs = static_cast<double>(m) * rows * cols;
  state.counters["GMAC/s"] =
      benchmark::Counter(macs * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (m == 1) {
    const double bytes = static_cast<double>(rows) * stet::RowBytes(type, cols);
    state.counters["GB/s"] =
        benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  }
}

struct Shape {
  const char* name;
  int64_t rows, cols;
};

void Register() {
  // SmolLM2-135M (576 wide, K = 576 not a K-quant multiple), Gemma 3 270M (640 wide:
  // its q5_0 fallback rows) and Llama-3.2-1B (2048/8192).
  const Shape shapes[] = {{"576x1536", 1536, 576},    {"1536x576", 576, 1536},
                          {"640x2048", 2048, 640},    {"2048x8192", 8192, 2048},
                          {"8192x2048", 2048, 8192},  {"2048x2048", 2048, 2048},
                          {"2048x49152", 49152, 576}, {"256x2048", 256, 2048}};
  // Every weight type of the table (numerics/dtype.cc) but f32 (no model ships it).
  for (DType t : stet::ComputableDTypes()) {
    if (t == DType::kF32) continue;
    for (const Shape& s : shapes) {
      const int64_t block = stet::GetDTypeTraits(static_cast<uint32_t>(t))->block_elems;
      if (s.cols % block != 0) continue;
      const std::string name = std::string("matmul/") + stet::DTypeName(t) + "/" + s.name;
      benchmark::RegisterBenchmark(name.c_str(), BM_MatMul, t, s.rows, s.cols)
          ->ArgName("m")
          ->Arg(1)
          ->Arg(2)
          ->Arg(4)
          ->Arg(8)
          ->Arg(16)
          ->Arg(32)
          ->Arg(64)
          ->Arg(512)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Our flag first: --threads N (the rest go to Google Benchmark; STET_ISA picks the path).
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      g_threads = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf(
          "usage: [STET_ISA=scalar|avx2|avx512] [STET_KERNEL_PLAN=type.class=row,...] "
          "stet_matmul_bench [--threads N] [benchmark flags]\n");
      rest.push_back(argv[i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (const char* spec = std::getenv("STET_KERNEL_PLAN")) {
    auto plan = kernels::MatMulPlan::Parse(spec);
    if (!plan.ok()) {
      std::fprintf(stderr, "STET_KERNEL_PLAN: %s\n", plan.status().message().c_str());
      return 2;
    }
    g_plan = std::make_unique<kernels::MatMulPlan>(*plan);
    g_isa = stet::Isa::kAuto;
  }
  int n = static_cast<int>(rest.size());
  Register();
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
