// The `stet` command as a user meets it: stdout carries exactly the generated
// text, stderr the rest; --help works; exit codes are 0 / 1 (work failed) /
// 2 (bad command line); --threads, --chunk and --isa never change the output.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "support/test_support.h"

namespace stet {
namespace {

using Output = testing::CommandResult;

// Runs a shell command line; captures stdout, discards stderr unless asked.
Output Sh(const std::string& args, bool with_stderr = false) {
  const std::string cmd =
      std::string(STET_BINARY) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  return testing::RunCommand(cmd);
}

std::string Stories() { return testing::SharedDir() + "/models/stories260K/stories260K.gguf"; }

TEST(StetCli, HelpAndUsageErrors) {
  auto h = Sh("--help");
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("run"), std::string::npos);
  EXPECT_NE(h.out.find("tokenize"), std::string::npos);
  auto rh = Sh("run --help");
  EXPECT_EQ(rh.exit_code, 0);
  EXPECT_NE(rh.out.find("--temp"), std::string::npos);
  EXPECT_EQ(Sh("run --no-such-flag").exit_code, 2);
  EXPECT_EQ(Sh("").exit_code, 2);
}

TEST(StetCli, MissingOrCorruptModelFailsCleanly) {
  auto r = Sh("run -m /nonexistent.gguf -p hi", true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("error"), std::string::npos) << r.out;
  const std::string bad = ::testing::TempDir() + "/bad.gguf";
  FILE* f = fopen(bad.c_str(), "wb");
  const char truncated[] = {'G', 'G', 'U', 'F', 3, 0, 0, 0, 1, 0};  // cut inside tensor_count
  fwrite(truncated, 1, sizeof truncated, f);
  fclose(f);
  r = Sh("run -m " + bad + " -p hi", true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("DataLoss"), std::string::npos) << r.out;
}

TEST(StetCli, RunPrintsExactlyTheGoldenText) {
  STET_REQUIRE_FILE(Stories());
  std::string golden = testing::ReadFileOrDie(
      testing::SharedDir() + "/models/stories260K/golden_greedy_256steps.llama2c_run.txt");
  if (!golden.empty() && golden.back() == '\n') golden.pop_back();
  for (const char* opts : {"-t 1", "-t 2 --isa scalar", "-t 3 --chunk 1"}) {
    auto r = Sh("run -m " + Stories() + " -n 256 --temp 0 " + opts);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, golden) << opts;
  }
}

TEST(StetCli, EchoAndLogitsHash) {
  STET_REQUIRE_FILE(Stories());
  auto r = Sh("run -m " + Stories() + " -p 'Once upon' -n 8 --temp 0 --echo -q");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("Once upon", 0), 0u) << r.out;
  // The hash is a fingerprint of the final logits: equal across threads and ISA paths.
  auto a =
      Sh("run -m " + Stories() + " -p 'Once upon' -n 8 --temp 0 -q --logits-hash -t 1 --isa scalar",
         true);
  auto b = Sh("run -m " + Stories() + " -p 'Once upon' -n 8 --temp 0 -q --logits-hash -t 3", true);
  EXPECT_NE(a.out.find("logits-hash: fnv1a64:"), std::string::npos) << a.out;
  EXPECT_EQ(a.out, b.out);
}

TEST(StetCli, SeededSamplingIsReproducible) {
  STET_REQUIRE_FILE(Stories());
  auto a = Sh("run -m " + Stories() + " -p 'Once' -n 40 --temp 1 --seed 5");
  auto b = Sh("run -m " + Stories() + " -p 'Once' -n 40 --temp 1 --seed 5 -t 2 --chunk 1");
  auto c = Sh("run -m " + Stories() + " -p 'Once' -n 40 --temp 1 --seed 6");
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

TEST(StetCli, FingerprintNamesModelAndSettings) {
  STET_REQUIRE_FILE(Stories());
  auto a = Sh("fingerprint -m " + Stories());
  auto b = Sh("fingerprint -m " + Stories() + " --kv-type f32");
  auto c = Sh("fingerprint -m " + Stories() + " --numerics adaptive -v");
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out.rfind("fp_", 0), 0u) << a.out;
  EXPECT_NE(a.out, b.out);
  EXPECT_NE(c.out.find("-adaptive"), std::string::npos);
  EXPECT_NE(c.out.find("model=270cba1bd5109f42"), std::string::npos) << c.out;
  EXPECT_EQ(Sh("fingerprint -m /nonexistent.gguf").exit_code, 1);
}

// --numerics and --kv-type are declared once (tools/common.cc) for every subcommand
// that takes them: each refuses a bad value at parse time, exit 2, naming what it wants.
TEST(StetCli, NumericsOptionsAreCheckedByEverySubcommand) {
  for (const char* sub : {"run", "serve", "bench", "fingerprint"}) {
    const std::string base = std::string(sub) + " -m /nonexistent.gguf ";
    auto mode = Sh(base + "--numerics sloppy", true);
    EXPECT_EQ(mode.exit_code, 2) << sub << ": " << mode.out;
    EXPECT_NE(mode.out.find("invariant, fast, precise or adaptive, not 'sloppy'"),
              std::string::npos)
        << sub << ": " << mode.out;
    auto kv = Sh(base + "--kv-type f8", true);
    EXPECT_EQ(kv.exit_code, 2) << sub << ": " << kv.out;
    EXPECT_NE(kv.out.find("f16, f32 or auto, not 'f8'"), std::string::npos)
        << sub << ": " << kv.out;
    EXPECT_NE(Sh(std::string(sub) + " --help").out.find("--kv-type"), std::string::npos) << sub;
  }
}

TEST(StetCli, QuantizeMakesARunnableModel) {
  STET_REQUIRE_FILE(Stories());
  const std::string q8 = ::testing::TempDir() + "/stories-q8_0.gguf";
  const std::string q4 = ::testing::TempDir() + "/stories-q4_1.gguf";
  auto a = Sh("quantize -m " + Stories() + " -o " + q8 + " --type q8_0", true);
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_NE(a.out.find("as q8_0"), std::string::npos) << a.out;
  ASSERT_EQ(Sh("quantize -m " + Stories() + " -o " + q4 + " --type q4_1").exit_code, 0);
  auto f32 = Sh("run -m " + Stories() + " -n 24 --temp 0");
  auto r8 = Sh("run -m " + q8 + " -n 24 --temp 0");
  auto r4 = Sh("run -m " + q4 + " -n 24 --temp 0");
  EXPECT_EQ(r8.exit_code, 0);
  EXPECT_EQ(r4.exit_code, 0);
  // Same model, other encodings: same start of the story, different fingerprints.
  EXPECT_EQ(r8.out.substr(0, 16), f32.out.substr(0, 16)) << r8.out;
  EXPECT_NE(Sh("fingerprint -m " + q8).out, Sh("fingerprint -m " + q4).out);
  EXPECT_EQ(Sh("quantize -m " + Stories() + " -o " + q4 + " --type q9_9").exit_code, 1);
}

// Every newer weight type end to end: a tiny random model written by `stet gguf-random`
// runs under `stet run` with the same logits hash on every ISA path, thread count and
// chunk size; `stet quantize` writes the 32-block ones (K = 64 rules out the 256-element
// super-blocks, which fall back to q8_0) and the result runs the same everywhere too.
TEST(StetCli, NewWeightTypesRunTheSameOnEveryPath) {
  const std::string dir = ::testing::TempDir();
  auto hashes = [](const std::string& model) {
    const std::string run = "run -m " + model + " -p 'the cat' -n 6 --temp 0 -q --logits-hash";
    std::vector<std::string> variants = {" --isa scalar -t 1", " -t 2 --chunk 1",
                                         " --isa scalar -t 3 --chunk 2"};
    if (CpuHasAvx2Fma()) variants.push_back(" --isa avx2 -t 1");
    std::vector<Output> out;
    for (const std::string& v : variants) out.push_back(Sh(run + v, true));
    return out;
  };
  for (const char* type : {"q5_0", "q5_1", "iq4_nl", "q2_k", "q3_k", "iq4_xs"}) {
    SCOPED_TRACE(type);
    const std::string path = dir + "/stet-cli-tiny-" + type + ".gguf";
    auto g = Sh(std::string("gguf-random --shape tiny --type ") + type + " -s 3 -o " + path, true);
    ASSERT_EQ(g.exit_code, 0) << g.out;
    const auto outs = hashes(path);
    ASSERT_EQ(outs[0].exit_code, 0) << outs[0].out;
    EXPECT_NE(outs[0].out.find("logits-hash: fnv1a64:"), std::string::npos) << outs[0].out;
    for (const Output& o : outs) EXPECT_EQ(o.out, outs[0].out);
  }
  if (!std::ifstream(Stories()).good()) return;  // the rest needs stories260K
  for (const char* type : {"q5_0", "q5_1", "iq4_nl"}) {
    SCOPED_TRACE(type);
    const std::string path = dir + "/stories-" + type + ".gguf";
    auto q = Sh("quantize -m " + Stories() + " -o " + path + " --type " + type, true);
    ASSERT_EQ(q.exit_code, 0) << q.out;
    EXPECT_NE(q.out.find(std::string("as ") + type), std::string::npos) << q.out;
    const auto outs = hashes(path);
    ASSERT_EQ(outs[0].exit_code, 0) << outs[0].out;
    for (const Output& o : outs) EXPECT_EQ(o.out, outs[0].out);
  }
}

// --draft-model: the same bytes as without speculation (greedy and seeded);
// a draft with another tokenizer, or --spec draft without a draft, exits 1
// with a message naming the files.
TEST(StetCli, DraftModelSpeculation) {
  STET_REQUIRE_FILE(Stories());
  const std::string tiny =
      testing::SharedDir() + "/models/llama-2-tiny-random/llama-2-tiny-random.gguf";
  STET_REQUIRE_FILE(tiny);
  const std::string q8 = ::testing::TempDir() + "/stories-draft-q8_0.gguf";
  ASSERT_EQ(Sh("quantize -m " + Stories() + " -o " + q8 + " --type q8_0").exit_code, 0);
  for (const char* sampling : {"--temp 0", "--temp 0.9 --seed 3"}) {
    const std::string run = "run -m " + Stories() + " -p 'Once upon' -n 60 " + sampling;
    auto off = Sh(run);
    auto on = Sh(run + " --draft-model " + q8 + " --spec-k 5");
    auto explicit_on = Sh(run + " --spec draft --draft-model " + q8, true);
    EXPECT_EQ(off.exit_code, 0);
    EXPECT_EQ(on.exit_code, 0);
    EXPECT_EQ(on.out, off.out) << sampling;
    EXPECT_NE(explicit_on.out.find("speculation draft"), std::string::npos) << explicit_on.out;
    EXPECT_NE(explicit_on.out.find("draft tokens accepted"), std::string::npos) << explicit_on.out;
  }
  auto bad = Sh("run -m " + Stories() + " -p hi -n 4 --draft-model " + tiny, true);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find(Stories()), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find(tiny), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("tokenizer"), std::string::npos) << bad.out;
  auto none = Sh("run -m " + Stories() + " -p hi -n 4 --spec draft", true);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("draft model"), std::string::npos) << none.out;
  EXPECT_EQ(Sh("run -m " + Stories() + " -p hi --spec lookup --draft-model " + q8).exit_code, 1);
}

TEST(StetCli, TokenizeIds) {
  STET_REQUIRE_FILE(Stories());
  auto r = Sh("tokenize -m " + Stories() + " --ids 'Once upon a time'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
  auto t = Sh("tokenize -m " + Stories() + " 'Once'");
  EXPECT_NE(t.out.find("403 -> ' Once'"), std::string::npos) << t.out;
}

}  // namespace
}  // namespace stet
