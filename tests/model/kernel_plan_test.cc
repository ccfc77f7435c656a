// Isa::kAuto takes MatMul's rows from the model's kernel plan (model/kernel_plan.cc).
// Whatever the plan — measured on this CPU, read back from the cache, or an odd one
// forced on purpose (scalar rows for decode, AVX-512 for prefill, AVX2 for small
// and batch rows, and every other assignment of this CPU's ISAs to the row classes) —
// every logit of a script of prefill, small-batch and decode steps is bitwise equal
// to the scalar path's: the choice changes which path runs, never an output.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernels/matmul_table.h"
#include "model/forward.h"
#include "model/paged_kv.h"
#include "model/random_model.h"
#include "support/test_support.h"

namespace stet {
namespace {

// Logits of a fixed script (default mode: two matmul rows per token): seq 0
// prefills 36 tokens (prefill class, 72 rows), decodes one (small, 2 rows), seq 1
// prefills 12 (batch, 24 rows) and 3 more (small), then both decode together
// (small, 4 rows). The output matrix sees the rows that want logits.
std::vector<float> ScriptLogits(const Model& model, Isa isa, int threads) {
  const HParams& hp = model.hparams();
  ThreadPool pool(threads);
  Forward fwd(model, &pool, isa, 64);
  PagedKvCache kv = PagedKvCache::Contiguous(hp, 2, 64, DType::kF16, 16);
  auto tok = [&](int i) { return static_cast<int32_t>((37 * i + 11) % hp.n_vocab); };
  std::vector<std::vector<BatchToken>> steps(5);
  for (int i = 0; i < 36; ++i) steps[0].push_back({tok(i), i, 0, i % 4 == 3});
  steps[1].push_back({tok(36), 36, 0, true});
  for (int i = 0; i < 12; ++i) steps[2].push_back({tok(100 + i), i, 1, true});
  for (int i = 12; i < 15; ++i) steps[3].push_back({tok(100 + i), i, 1, true});
  steps[4].push_back({tok(37), 37, 0, true});
  steps[4].push_back({tok(115), 15, 1, true});
  std::vector<float> all;
  for (const auto& batch : steps) {
    std::vector<float> logits;
    EXPECT_TRUE(fwd.Run(batch, kv, &logits).ok());
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

std::vector<Isa> IsasHere() {
  std::vector<Isa> out{Isa::kScalar};
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (ResolveIsa(Isa::kAuto) == isa || (isa == Isa::kAvx2 && CpuHasAvx2Fma())) {
      out.push_back(isa);
    }
  }
  return out;
}

void ExpectSameBits(const std::vector<float>& want, const std::vector<float>& got,
                    const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << what;
}

// Every assignment of this CPU's ISAs to (decode, small, prefill) as a plan, batch
// taking each ISA in turn along them (every class meets every ISA).
void ExpectEveryPlanGivesTheSameBits(Model& model, const std::vector<float>& want) {
  const std::vector<Isa> isas = IsasHere();
  const size_t n = isas.size();
  for (size_t d = 0; d < n; ++d) {
    for (size_t s = 0; s < n; ++s) {
      for (size_t p = 0; p < n; ++p) {
        const std::string spec =
            std::string("decode=") + IsaName(isas[d]) + ",small=" + IsaName(isas[s]) +
            ",batch=" + IsaName(isas[(d + s + p + 1) % n]) + ",prefill=" + IsaName(isas[p]);
        auto plan = kernels::MatMulPlan::Parse(spec);
        ASSERT_TRUE(plan.ok()) << plan.status().ToString();
        model.SetKernelPlan(*plan);
        ExpectSameBits(want, ScriptLogits(model, Isa::kAuto, 2), spec);
      }
    }
  }
}

TEST(KernelPlan, EveryPlanGivesTheScalarBitsOnTinyModels) {
  for (DType t : {DType::kQ4_1, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K, DType::kF16}) {
    SCOPED_TRACE(DTypeName(t));
    const std::string path =
        ::testing::TempDir() + "/stet-plan-tiny-" + std::string(DTypeName(t)) + ".gguf";
    RandomModelOptions o;
    o.shape = "tiny";
    o.type = t;
    o.seed = 5;
    ASSERT_TRUE(WriteRandomModel(o, path).ok());
    auto model = Model::Load(path);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const std::vector<float> want = ScriptLogits(**model, Isa::kScalar, 1);
    ExpectEveryPlanGivesTheSameBits(**model, want);
  }
}

// The real model, with the odd plan the issue names (or its nearest on this CPU) and
// the measured one, cached and read back.
TEST(KernelPlan, SmolLM2OddAndMeasuredPlansGiveTheSameBits) {
  const std::string path = testing::ModelCacheDir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  STET_REQUIRE_FILE(path);
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const std::vector<float> want = ScriptLogits(**model, ResolveIsa(Isa::kAuto), 2);
  const std::string odd = CpuHasAvx512()    ? "decode=scalar,small=avx2,batch=avx2,prefill=avx512"
                          : CpuHasNeon()    ? "decode=scalar,small=neon,batch=neon,prefill=scalar"
                          : CpuHasAvx2Fma() ? "decode=scalar,small=avx2,batch=avx2,prefill=scalar"
                                            : "decode=scalar,small=scalar";
  auto plan = kernels::MatMulPlan::Parse(odd);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  (*model)->SetKernelPlan(*plan);
  ExpectSameBits(want, ScriptLogits(**model, Isa::kAuto, 2), odd);

  const std::string cache = ::testing::TempDir() + "/stet-kernel-plans-test";
  ASSERT_EQ(setenv("STET_KERNEL_CACHE", cache.c_str(), 1), 0);
  std::system(("rm -rf '" + cache + "'").c_str());
  const std::string first = (*model)->TuneKernels(2);
  if (!CpuHasAvx2Fma() && !CpuHasNeon()) {  // one path: nothing measured, nothing cached
    EXPECT_NE(first.find("nothing to measure"), std::string::npos) << first;
    ExpectSameBits(want, ScriptLogits(**model, Isa::kAuto, 2), "the only rows");
    unsetenv("STET_KERNEL_CACHE");
    return;
  }
  EXPECT_NE(first.find("measured in"), std::string::npos) << first;
  ASSERT_NE((*model)->kernel_plan(), nullptr);
  const std::string measured = (*model)->kernel_plan()->ToString();
  EXPECT_NE(measured.find("q4_1.decode="), std::string::npos) << measured;
  ExpectSameBits(want, ScriptLogits(**model, Isa::kAuto, 2), "measured: " + measured);
  // The second load reads the measurement back instead of repeating it — unless
  // the machine was busy while measuring (then nothing was cached, and the
  // second load measures again).
  const std::string second = (*model)->TuneKernels(2);
  if (first.find("not cached") == std::string::npos) {
    EXPECT_NE(second.find("measured earlier"), std::string::npos) << second;
    EXPECT_EQ((*model)->kernel_plan()->ToString(), measured);
  } else {
    EXPECT_NE(second.find("measured in"), std::string::npos) << second;
  }
  unsetenv("STET_KERNEL_CACHE");
}

// Measuring beside one spinning process per core (more runnable threads than
// cores): the plan is used but not cached, so the next load measures again
// instead of keeping a plan that timed the machine's load.
TEST(KernelPlan, AMeasurementOnABusyMachineIsNotCached) {
  const std::string path = ::testing::TempDir() + "/stet-plan-busy.gguf";
  RandomModelOptions o;
  o.shape = "tiny";
  o.type = DType::kQ4_K;
  o.seed = 6;
  ASSERT_TRUE(WriteRandomModel(o, path).ok());
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const std::string cache = ::testing::TempDir() + "/stet-kernel-plans-busy";
  std::system(("rm -rf '" + cache + "'").c_str());
  ASSERT_EQ(setenv("STET_KERNEL_CACHE", cache.c_str(), 1), 0);
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < 2 * cores; ++i) {
    hogs.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  const std::string note = (*model)->TuneKernels(2);
  stop = true;
  for (auto& h : hogs) h.join();
  unsetenv("STET_KERNEL_CACHE");
  // A CPU with one path times nothing, so has nothing to keep either way.
  const bool choice = CpuHasAvx2Fma() || CpuHasNeon();
  EXPECT_NE(note.find(choice ? "busy machine" : "nothing to measure"), std::string::npos) << note;
  if (choice) EXPECT_NE(note.find("not cached"), std::string::npos) << note;
  EXPECT_NE((*model)->kernel_plan(), nullptr);
  const int left = std::system(("ls '" + cache + "'/*.plan >/dev/null 2>&1").c_str());
  EXPECT_NE(left, 0) << "a plan file was written to " << cache;
}

}  // namespace
}  // namespace stet
