// `stet bench` and `stet gguf-random` as bench/run.py uses them: bench --json prints one
// JSON object with positive prefill and decode speeds (also in the adaptive numerics
// mode); gguf-random writes a model that bench runs; bad flags exit 2 with a message.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "support/test_support.h"

namespace stet {
namespace {

using Output = testing::CommandResult;

// Runs `stet ARGS`; captures stdout (and stderr when asked).
Output Sh(const std::string& args, bool with_stderr = false) {
  const std::string cmd =
      std::string(STET_BINARY) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  return testing::RunCommand(cmd);
}

std::string Stories() { return testing::SharedDir() + "/models/stories260K/stories260K.gguf"; }

TEST(BenchCli, JsonOnStories260K) {
  STET_REQUIRE_FILE(Stories());
  auto r = Sh("bench -m " + Stories() + " -p 8 -n 4 --reps 1 -t 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    FAIL() << "not JSON: " << e.what() << "\n" << r.out;
  }
  ASSERT_TRUE(j["prefill_tok_s"].is_number()) << r.out;
  ASSERT_TRUE(j["decode_tok_s"].is_number()) << r.out;
  EXPECT_GT(j["prefill_tok_s"].get<double>(), 0);
  EXPECT_GT(j["decode_tok_s"].get<double>(), 0);
  EXPECT_EQ(j["decode_batch"], 1);
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["numerics"], "invariant");
  EXPECT_GT(j["weight_bytes"].get<int64_t>(), 0);
  EXPECT_FALSE(j["cpu"].get<std::string>().empty());
  ASSERT_EQ(j["tests"].size(), 2u);
  EXPECT_EQ(j["tests"][0]["test"], "pp8");
  EXPECT_EQ(j["tests"][1]["test"], "tg4");
  EXPECT_EQ(j["tests"][1]["tok_s"].size(), 1u);
}

// --explain prints the kernel table: every computable type and row class, the row
// each ISA uses, and the one --isa auto uses (here an odd plan forced through
// STET_KERNEL_PLAN); the measurement never changes what bench computes.
TEST(BenchCli, ExplainPrintsTheKernelTable) {
  STET_REQUIRE_FILE(Stories());
  auto r = Sh("bench -m " + Stories() + " -p 0 -n 2 --reps 1 -t 2 --explain", true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // Measured — or, where one row serves each class of this model (stories260K's f32
  // on a CPU with AVX2 and no AVX-512), nothing to measure.
  EXPECT_TRUE(r.out.find("kernel plan: measured") != std::string::npos ||
              r.out.find("kernel plan: one row serves each class") != std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("auto (measured)"), std::string::npos) << r.out;
  for (const char* row : {"\nq4_1    decode ", "\nq4_k    prefill", "\nf16     small "}) {
    EXPECT_NE(r.out.find(row), std::string::npos) << row << "\n" << r.out;
  }
  auto forced = Sh("bench -m " + Stories() + " -p 0 -n 2 --reps 1 --isa scalar --explain");
  ASSERT_EQ(forced.exit_code, 0) << forced.out;
  EXPECT_NE(forced.out.find("--isa forces one path"), std::string::npos) << forced.out;
  auto odd = testing::RunCommand("STET_KERNEL_PLAN='decode=scalar,f32.prefill=scalar' " +
                                 std::string(STET_BINARY) + " bench -m " + Stories() +
                                 " -p 0 -n 2 --reps 1 --explain 2>&1");
  ASSERT_EQ(odd.exit_code, 0) << odd.out;
  EXPECT_NE(odd.out.find("from STET_KERNEL_PLAN"), std::string::npos) << odd.out;
  EXPECT_NE(odd.out.find("\nf32     decode   ref.float"), std::string::npos) << odd.out;
}

// STET_MAX_ISA=avx2 runs this machine as a CPU without AVX-512 would: no AVX-512
// kernel in the table or in the plan auto measures (a plan of its own: the cache key
// names the paths the CPU reports), and =scalar leaves only the reference rows, one
// per class: nothing to measure.
TEST(BenchCli, MaxIsaHidesThePathsAboveIt) {
  STET_REQUIRE_FILE(Stories());
  const std::string cache = ::testing::TempDir() + "/stet-max-isa-plans";
  std::filesystem::remove_all(cache);  // each run measures its plans afresh
  auto bench = [&](const std::string& max_isa, const std::string& model, const std::string& flags) {
    // "": the CPU as it is, whatever cap the test itself runs under.
    const std::string env =
        max_isa.empty() ? "env -u STET_MAX_ISA " : "STET_MAX_ISA=" + max_isa + " ";
    return testing::RunCommand(env + "STET_KERNEL_CACHE=" + cache + " " + std::string(STET_BINARY) +
                               " bench -m " + model + " -p 0 -n 2 --reps 1 -t 2 " + flags +
                               " 2>&1");
  };
  auto explain = [&](const std::string& max_isa) { return bench(max_isa, Stories(), "--explain"); };
  const Output avx2 = explain("avx2");
  ASSERT_EQ(avx2.exit_code, 0) << avx2.out;
  EXPECT_NE(avx2.out.find("\nf32     decode   avx2.float"), std::string::npos) << avx2.out;
  EXPECT_EQ(avx2.out.find("avx512"), std::string::npos) << avx2.out;
  const Output scalar = explain("scalar");
  ASSERT_EQ(scalar.exit_code, 0) << scalar.out;
  EXPECT_EQ(scalar.out.find("avx2"), std::string::npos) << scalar.out;
  EXPECT_EQ(scalar.out.find("avx512"), std::string::npos) << scalar.out;
  EXPECT_NE(scalar.out.find("\nq4_1    decode   ref.q8"), std::string::npos) << scalar.out;
  EXPECT_NE(scalar.out.find("nothing to measure"), std::string::npos) << scalar.out;
  // A path the capped CPU does not report is refused, and the message says why.
  const Output refused = bench("avx2", Stories(), "--isa avx512");
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.out.find("lacks AVX-512"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("STET_MAX_ISA=avx2 hides it"), std::string::npos) << refused.out;
  const Output bad = explain("avx9000");
  ASSERT_EQ(bad.exit_code, 0) << bad.out;
  EXPECT_NE(bad.out.find("STET_MAX_ISA='avx9000' ignored"), std::string::npos) << bad.out;
  // Plans are kept per set of paths the CPU reports: SmolLM2's q4_1 has rows to
  // choose among with AVX2 alone, so the capped run measures and caches a plan, a
  // second capped run reads it back, and an uncapped run on an AVX-512 machine
  // measures its own (on a CPU without AVX-512 the two are the same CPU; on one
  // without AVX2 there is nothing to measure at all).
  const std::string smollm2 = testing::ModelCacheDir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  STET_REQUIRE_FILE(smollm2);
  auto smol = [&](const std::string& max_isa) { return bench(max_isa, smollm2, "--explain"); };
  const Output capped = smol("avx2"), again = smol("avx2"), full = smol("");
  for (const Output* o : {&capped, &again, &full}) ASSERT_EQ(o->exit_code, 0) << o->out;
  if (capped.out.find("avx2.") == std::string::npos) {
    for (const Output* o : {&capped, &again, &full}) {
      EXPECT_NE(o->out.find("nothing to measure"), std::string::npos) << o->out;
    }
    return;
  }
  EXPECT_NE(capped.out.find("kernel plan: measured in"), std::string::npos) << capped.out;
  // (A measurement taken while other processes held the cores is not cached.)
  const bool kept = capped.out.find("not cached") == std::string::npos;
  EXPECT_NE(again.out.find(kept ? "kernel plan: measured earlier" : "kernel plan: measured in"),
            std::string::npos)
      << again.out;
  const bool avx512_here = full.out.find("avx512.") != std::string::npos;
  EXPECT_NE(full.out.find(avx512_here ? "kernel plan: measured in" : "kernel plan: measured"),
            std::string::npos)
      << full.out;
}

// --isa with several paths: one process, each test's reps taking turns, a JSON
// object per path in the order named (each with its own reps); a path named
// twice is a usage error.
TEST(BenchCli, SeveralPathsInOneRun) {
  STET_REQUIRE_FILE(Stories());
  auto r = Sh("bench -m " + Stories() + " -p 8 -n 3 --reps 2 -t 2 --isa auto,scalar --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_TRUE(j.is_array()) << r.out;
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["isa"], "auto");
  EXPECT_EQ(j[1]["isa"], "scalar");
  for (const auto& o : j) {
    ASSERT_EQ(o["tests"].size(), 2u) << o.dump();
    for (const auto& t : o["tests"]) EXPECT_EQ(t["tok_s"].size(), 2u) << t.dump();
    EXPECT_GT(o["decode_tok_s"].get<double>(), 0);
  }
  EXPECT_TRUE(j[0]["kernel_plan"].is_string());
  auto table = Sh("bench -m " + Stories() + " -p 0 -n 2 --reps 1 --isa scalar,auto");
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("path scalar (2 paths"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("path auto (2 paths"), std::string::npos) << table.out;
  auto twice = Sh("bench -m " + Stories() + " -p 0 -n 2 --isa scalar,scalar", true);
  EXPECT_EQ(twice.exit_code, 2) << twice.out;
  EXPECT_NE(twice.out.find("twice"), std::string::npos) << twice.out;
}

TEST(BenchCli, BatchedDecodeAndTable) {
  STET_REQUIRE_FILE(Stories());
  auto r = Sh("bench -m " + Stories() + " -p 0 -n 3 --batch 1,3 --tg-prompt 2 --reps 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_TRUE(j["prefill_tok_s"].is_null());
  ASSERT_EQ(j["tests"].size(), 2u);
  EXPECT_EQ(j["tests"][1]["test"], "tg3x3");
  EXPECT_EQ(j["tests"][1]["batch"], 3);
  EXPECT_GT(j["tests"][1]["median_tok_s"].get<double>(), 0);
  EXPECT_EQ(j["tests"][1]["tok_s"].size(), 2u);

  auto t = Sh("bench -m " + Stories() + " -p 4 -n 2 --reps 1");
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_NE(t.out.find("| pp4"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("| tg2"), std::string::npos) << t.out;
}

TEST(BenchCli, AdaptiveNumerics) {
  STET_REQUIRE_FILE(Stories());
  auto r = Sh("bench -m " + Stories() + " -p 8 -n 2 --batch 2 --reps 1 --numerics adaptive --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["numerics"], "adaptive");
  EXPECT_EQ(j["decode_batch"], 2);
  EXPECT_GT(j["decode_tok_s"].get<double>(), 0);
}

// -d: every test after D untimed context tokens, named as llama-bench names them.
TEST(BenchCli, DepthRunsEachTestAfterTheContext) {
  STET_REQUIRE_FILE(Stories());
  auto r = Sh("bench -m " + Stories() + " -p 8 -n 3 -d 0,40 --reps 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_EQ(j["tests"].size(), 4u);
  EXPECT_EQ(j["tests"][0]["test"], "pp8");
  EXPECT_EQ(j["tests"][2]["test"], "pp8@d40");
  EXPECT_EQ(j["tests"][2]["depth"], 40);
  EXPECT_EQ(j["tests"][3]["test"], "tg3@d40");
  EXPECT_GT(j["tests"][3]["median_tok_s"].get<double>(), 0);
  // Past the training context (stories260K: 2048, the default) is a clear error.
  auto deep = Sh("bench -m " + Stories() + " -p 8 -n 3 -d 2100 --reps 1", true);
  EXPECT_EQ(deep.exit_code, 1) << deep.out;
  EXPECT_NE(deep.out.find("trained for"), std::string::npos) << deep.out;
  EXPECT_EQ(Sh("bench -m " + Stories() + " -d -1").exit_code, 2);
}

TEST(BenchCli, UsageErrors) {
  auto h = Sh("bench --help");
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("--numerics"), std::string::npos);
  auto sloppy = Sh("bench -m /nonexistent.gguf --numerics sloppy", true);
  EXPECT_EQ(sloppy.exit_code, 2);
  EXPECT_NE(sloppy.out.find("invariant, fast, precise or adaptive"), std::string::npos)
      << sloppy.out;
  EXPECT_EQ(Sh("bench -m /nonexistent.gguf --reps 0").exit_code, 2);
  auto missing = Sh("bench -m /nonexistent.gguf", true);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("error"), std::string::npos) << missing.out;
}

TEST(GgufRandomCli, HelpAndBadShape) {
  auto h = Sh("gguf-random --help");
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("--shape"), std::string::npos);
  EXPECT_NE(h.out.find("q8_0"), std::string::npos);  // the K-quant fallback is documented
  const std::string out = ::testing::TempDir() + "/never.gguf";
  auto bad = Sh("gguf-random --shape gpt-5 --type q4_1 -o " + out, true);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("gpt-5"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("smollm2-135m"), std::string::npos) << bad.out;
  auto bad_type = Sh("gguf-random --shape tiny --type q8_1 -o " + out, true);
  EXPECT_EQ(bad_type.exit_code, 2);
  EXPECT_NE(bad_type.out.find("q8_1"), std::string::npos) << bad_type.out;
  EXPECT_EQ(Sh("gguf-random --shape tiny --layers 9 -o " + out).exit_code, 2);
  EXPECT_EQ(Sh("gguf-random --shape tiny").exit_code, 2);  // -o is required
}

TEST(GgufRandomCli, WritesAModelBenchRuns) {
  const std::string path = ::testing::TempDir() + "/tiny_q4_k.gguf";
  auto w = Sh("gguf-random --shape tiny --type q4_k --seed 3 -o " + path, true);
  ASSERT_EQ(w.exit_code, 0) << w.out;
  auto r = Sh("bench -m " + path + " -p 4 -n 2 --reps 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["type"], "q4_k_s");
  EXPECT_EQ(j["tensor_types"]["q4_k"], 14);  // 2 layers x 7 matrices; the embedding is q6_k
  EXPECT_EQ(j["tensor_types"]["q6_k"], 1);
  EXPECT_GT(j["decode_tok_s"].get<double>(), 0);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace stet
