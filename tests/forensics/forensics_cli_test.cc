// The forensics subcommands as a user meets them: --help, and exit codes —
// 2 for a bad command line, an unreachable endpoint or a bad input file (never
// a crash); `eval compare` and `drift --baseline` on files. No server is
// needed: real-server runs are in e2e_llamacpp.sh.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/test_support.h"

namespace stet {
namespace {

using Output = testing::CommandResult;

Output Sh(const std::string& args) {
  const std::string cmd = std::string(STET_BINARY) + " " + args + " 2>&1";
  return testing::RunCommand(cmd);
}

std::string Temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Nothing listens on the discard port of loopback in a test environment.
const char kDead[] = "--endpoint http://127.0.0.1:9 --timeout 5";

TEST(ForensicsCli, Help) {
  auto h = Sh("--help");
  EXPECT_EQ(h.exit_code, 0);
  for (const char* sub : {"probe", "eval", "drift"})
    EXPECT_NE(h.out.find(sub), std::string::npos) << sub;
  auto p = Sh("probe --help");
  EXPECT_EQ(p.exit_code, 0);
  for (const char* opt :
       {"--concurrency", "--runs", "--messages", "--logprobs", "--html", "--json"}) {
    EXPECT_NE(p.out.find(opt), std::string::npos) << opt;
  }
  auto e = Sh("eval --help");
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_NE(e.out.find("--seed-policy"), std::string::npos);
  EXPECT_NE(e.out.find("compare"), std::string::npos);
  auto d = Sh("drift --help");
  EXPECT_EQ(d.exit_code, 0);
  EXPECT_NE(d.out.find("--threshold"), std::string::npos);
}

TEST(ForensicsCli, ProxyAndCanaryHelpAndUsage) {
  auto p = Sh("proxy --help");
  EXPECT_EQ(p.exit_code, 0);
  for (const char* opt :
       {"--upstream", "--record", "--upstream-key-env", "--logprob-sample", "--sample-seed",
        "--redact", "--retain", "--canary", "--upstream-timeout"}) {
    EXPECT_NE(p.out.find(opt), std::string::npos) << opt;
  }
  EXPECT_EQ(Sh("proxy").exit_code, 2);  // --upstream, --record required
  EXPECT_EQ(Sh("proxy --upstream http://h --record x.db --port 70000").exit_code, 2);
  auto w = Sh("drift watch --help");
  EXPECT_EQ(w.exit_code, 0);
  for (const char* opt :
       {"--canary", "--every", "--store", "--alpha", "--baseline-runs", "--repeats"}) {
    EXPECT_NE(w.out.find(opt), std::string::npos) << opt;
  }
  EXPECT_EQ(Sh("drift report --help").exit_code, 0);
  EXPECT_EQ(Sh("drift report").exit_code, 2);  // STORE required
  EXPECT_EQ(Sh("drift").exit_code, 2);         // the capture's own options are still required
}

TEST(ForensicsCli, UsageErrorsExitTwo) {
  EXPECT_EQ(Sh("probe").exit_code, 2);  // --endpoint, --model required
  EXPECT_EQ(Sh("probe --endpoint http://127.0.0.1:9 -m x").exit_code, 2);  // no prompt
  EXPECT_EQ(Sh("probe --endpoint http://127.0.0.1:9 -m x -p a --messages f.json").exit_code, 2);
  EXPECT_EQ(Sh("probe --endpoint http://127.0.0.1:9 -m x -p a --concurrency one").exit_code, 2);
  EXPECT_EQ(Sh("eval").exit_code, 2);
  EXPECT_EQ(Sh("eval compare onlyone.json").exit_code, 2);
  EXPECT_EQ(Sh("drift --endpoint http://127.0.0.1:9 -m x").exit_code, 2);  // --prompts required
  const std::string prompts = Temp("cli_prompts.txt", "hello\n");
  auto nothing = Sh(std::string("drift ") + kDead + " -m x --prompts " + prompts);
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.out.find("nothing to do"), std::string::npos) << nothing.out;
  EXPECT_EQ(Sh("eval compare --no-such-flag a b").exit_code, 2);
}

TEST(ForensicsCli, UnreachableEndpointExitsTwoWithAMessage) {
  auto p = Sh(std::string("probe ") + kDead + " -m x -p hi -n 2 -c 1");
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.out.find("error"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("127.0.0.1:9"), std::string::npos) << p.out;
  const std::string ds =
      Temp("cli_ds.jsonl", "{\"id\": \"a\", \"prompt\": \"p\", \"expected\": \"x\"}\n");
  auto e = Sh(std::string("eval ") + kDead + " -m x --repeats 2 --dataset " + ds + " --out " +
              ::testing::TempDir() + "/cli_eval_out");
  EXPECT_EQ(e.exit_code, 2);  // every request failed: recorded, not scored
  std::ifstream results(::testing::TempDir() + "/cli_eval_out/results.json");
  ASSERT_TRUE(results.good());
  const auto doc = nlohmann::json::parse(results);
  EXPECT_EQ(doc["summary"]["errors"], 2);
  EXPECT_TRUE(doc["items"][0]["results"][0].contains("error"));
  const std::string prompts = Temp("cli_prompts2.txt", "hello\n");
  EXPECT_EQ(Sh(std::string("drift ") + kDead + " -m x --prompts " + prompts + " --save " +
               ::testing::TempDir() + "/cli_never.json")
                .exit_code,
            2);
}

TEST(ForensicsCli, BadInputFilesExitTwo) {
  const std::string bad_ds = Temp("cli_bad.jsonl", "{\"id\": \"a\"}\n");
  auto e = Sh(std::string("eval ") + kDead + " -m x --dataset " + bad_ds);
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.out.find("cli_bad.jsonl:1"), std::string::npos) << e.out;  // names file and line
  EXPECT_EQ(Sh(std::string("eval ") + kDead + " -m x --metric fuzzy --dataset " + bad_ds).exit_code,
            2);
  const std::string prompts = Temp("cli_prompts3.txt", "hello\n");
  const std::string not_capture = Temp("cli_not_capture.json", "{\"tool\": \"other\"}");
  auto d = Sh(std::string("drift ") + kDead + " -m x --prompts " + prompts + " --baseline " +
              not_capture);
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_NE(d.out.find("not a stet drift capture"), std::string::npos) << d.out;
  EXPECT_EQ(Sh("eval compare /nonexistent/a.json /nonexistent/b.json").exit_code, 2);
  const std::string msgs = Temp("cli_msgs.json", "{\"messages\": []}");
  EXPECT_EQ(Sh(std::string("probe ") + kDead + " -m x --messages " + msgs).exit_code, 2);
}

std::string ResultsFile(const std::string& name, const std::vector<int>& rates_x10) {
  nlohmann::json d;
  d["tool"] = "stet eval";
  d["run"] = {{"model", "m"}};
  d["items"] = nlohmann::json::array();
  for (size_t i = 0; i < rates_x10.size(); ++i) {
    d["items"].push_back({{"id", "q" + std::to_string(i)}, {"pass_rate", rates_x10[i] / 10.0}});
  }
  return Temp(name, d.dump());
}

TEST(ForensicsCli, EvalCompareOnFiles) {
  const std::string a = ResultsFile("cli_a.json", {0, 2, 4, 6, 8, 10, 0, 2, 4, 6, 8, 10});
  const std::string b = ResultsFile("cli_b.json", {0, 2, 4, 6, 8, 10, 0, 2, 4, 6, 8, 10});
  const std::string out = ::testing::TempDir() + "/cli_cmp.json";
  auto r = Sh("eval compare " + a + " " + b + " --json " + out);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("no detectable difference"), std::string::npos) << r.out;
  std::ifstream f(out);
  ASSERT_TRUE(f.good());
  EXPECT_EQ(nlohmann::json::parse(f)["shared_items"], 12);
  // Reproducible: the same files and seed give the same report.
  EXPECT_EQ(Sh("eval compare " + a + " " + b).out, Sh("eval compare " + a + " " + b).out);
}

}  // namespace
}  // namespace stet
