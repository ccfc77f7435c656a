// The proxy's pure parts and its store, without a network (stream folding
// and the final-event test: tests/wire/stream_fold_test.cc): logprob
// stripping and injection, the seeded sampling draw (against
// values computed independently in Python), redaction paths, the snapshot's
// canonical hash, the SQLite exchange store (group commit from 8 threads,
// snapshots once per hash, queries, retention), session linking and answer
// comparison for replay, and the canary's permutation test — its exact null
// distribution, and its false-alarm rate and power measured by simulation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <thread>

#include "base/rng.h"
#include "forensics/analysis/canary.h"
#include "forensics/client/answer_shaping.h"
#include "forensics/replay/replay_proxy.h"
#include "forensics/store/exchange.h"
#include "forensics/store/exchange_store.h"

namespace stet::forensics {
namespace {

using J = nlohmann::ordered_json;

TEST(Exchange, StripAndInjectLogprobs) {
  J a = {{"choices", J::array({{{"index", 0}, {"logprobs", {{"content", J::array()}}}},
                               {{"index", 1}, {"logprobs", nullptr}}})}};
  EXPECT_TRUE(StripChoiceLogprobs(a));
  EXPECT_TRUE(a["choices"][0]["logprobs"].is_null());
  EXPECT_FALSE(StripChoiceLogprobs(a));
  J chat = {{"messages", J::array()}};
  EXPECT_EQ(InjectLogprobs(ApiKind::kChat, chat, 5), J({{"logprobs", true}, {"top_logprobs", 5}}));
  J chat_false = {{"logprobs", false}, {"top_logprobs", 2}};
  EXPECT_EQ(InjectLogprobs(ApiKind::kChat, chat_false, 5), J({{"logprobs", true}}));
  EXPECT_EQ(chat_false["top_logprobs"], 2);
  J asked = {{"logprobs", true}};
  EXPECT_TRUE(InjectLogprobs(ApiKind::kChat, asked, 5).is_null());
  J comp = {{"prompt", "x"}};
  EXPECT_EQ(InjectLogprobs(ApiKind::kCompletions, comp, 5), J({{"logprobs", 5}}));
  J comp0 = {{"prompt", "x"},
             {"logprobs", 0}};  // asked for the chosen tokens' logprobs: not a candidate
  EXPECT_TRUE(InjectLogprobs(ApiKind::kCompletions, comp0, 5).is_null());
  J resp = {{"input", "x"}};
  EXPECT_TRUE(InjectLogprobs(ApiKind::kResponses, resp, 5).is_null());
}

TEST(Exchange, SamplingDrawIsSeededPhiloxAndHasItsRate) {
  // Values from tests/forensics/e2e_proxy.py's philox_u, an independent Python implementation.
  EXPECT_EQ(DrawLogprobSample(0.5, 7, 0).u, 0.18120474668201436);
  EXPECT_EQ(DrawLogprobSample(0.5, 7, 1).u, 0.2273156238244931);
  EXPECT_EQ(DrawLogprobSample(0.5, 0, 12345).u, 0.41212899980900186);
  int sampled = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const SampleDraw d = DrawLogprobSample(0.05, 42, static_cast<uint64_t>(i));
    ASSERT_GE(d.u, 0.0);
    ASSERT_LT(d.u, 1.0);
    sampled += d.sampled;
  }
  const double sd = std::sqrt(n * 0.05 * 0.95);
  EXPECT_NEAR(sampled, n * 0.05, 4 * sd);
  EXPECT_FALSE(DrawLogprobSample(0.0, 1, 3).sampled);
  EXPECT_TRUE(DrawLogprobSample(1.0, 1, 3).sampled);
}

TEST(Exchange, RedactPaths) {
  auto p = ParseRedactPath("$.messages[*].content");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->steps, (std::vector<std::string>{"request", "messages", "[*]", "content"}));
  J rec = {{"request",
            {{"messages", J::array({{{"role", "system"}, {"content", "s"}},
                                    {{"role", "user"}, {"content", "u"}}})}}},
           {"response", {{"choices", J::array({{{"message", {{"content", "a"}}}}})}}}};
  EXPECT_EQ(Redact(rec, *p), 2);
  EXPECT_EQ(rec["request"]["messages"][1]["content"], "[redacted]");
  EXPECT_EQ(rec["request"]["messages"][1]["role"], "user");
  auto q = ParseRedactPath("response.choices[0].message");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(Redact(rec, *q), 1);
  EXPECT_EQ(rec["response"]["choices"][0]["message"], "[redacted]");
  EXPECT_EQ(Redact(rec, *ParseRedactPath("request.nothing.here")), 0);
  for (const char* bad :
       {"", "a..b", "a[", "a[x]", "[*].a", "id", "a.[1", "request.messages[-1]"}) {
    EXPECT_FALSE(ParseRedactPath(bad).ok()) << bad;
  }
}

TEST(Exchange, SnapshotIsCanonicalAndSkipsTheUserTurn) {
  const J a = J::parse(
      R"({"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"u1"}],
                          "tools":[{"type":"function","function":{"name":"f","parameters":{"b":1,"a":2}}}],
                          "response_format":{"type":"json_object"}})");
  const J b = J::parse(R"({"response_format":{"type":"json_object"},
                          "tools":[{"function":{"parameters":{"a":2,"b":1},"name":"f"},"type":"function"}],
                          "messages":[{"content":"S","role":"system"},{"role":"user","content":"u2"}],"model":"m2"})");
  const std::string ca = CanonicalJson(AnswerShapingSnapshot(a)),
                    cb = CanonicalJson(AnswerShapingSnapshot(b));
  EXPECT_EQ(ca, cb);
  EXPECT_EQ(
      ca, R"({"response_format":{"type":"json_object"},"system":[{"content":"S","role":"system"}],)"
          R"("tools":[{"function":{"name":"f","parameters":{"a":2,"b":1}},"type":"function"}]})");
  EXPECT_TRUE(AnswerShapingSnapshot(J::parse(R"({"prompt":"x"})")).is_null());
  EXPECT_EQ(AnswerShapingSnapshot(J::parse(R"({"instructions":"I","input":"x"})")),
            J({{"instructions", "I"}}));
}

TEST(Exchange, KeptHeadersAndContext) {
  const J h = KeptHeaders({{"X-Request-Id", "r1"},
                           {"x-ratelimit-remaining-tokens", "9"},
                           {"Set-Cookie", "s"},
                           {"Authorization", "Bearer k"},
                           {"openai-processing-ms", "12"}});
  EXPECT_EQ(h, J({{"x-request-id", "r1"},
                  {"x-ratelimit-remaining-tokens", "9"},
                  {"openai-processing-ms", "12"}}));
  EXPECT_EQ(ClientContext("{\"v\":1}", J({{"metadata", {{"k", "x"}}}})),
            J({{"header", {{"v", 1}}}, {"metadata", {{"k", "x"}}}}));
  EXPECT_EQ(ClientContext("v7", J::object()), J({{"header", "v7"}}));
  EXPECT_TRUE(ClientContext("", J::object()).is_null());
}

J Exchange(const std::string& id, const std::string& t, const std::string& system = "S",
           const std::string& kind = "traffic") {
  return J{{"schema", kExchangeSchema},
           {"id", id},
           {"kind", kind},
           {"endpoint", "/v1/chat/completions"},
           {"received_at", t},
           {"status", 200},
           {"outcome", "ok"},
           {"request",
            {{"messages", J::array({{{"role", "system"}, {"content", system}},
                                    {{"role", "user"}, {"content", id}}})}}}};
}

TEST(ExchangeStoreSqlite, GroupCommitSnapshotsQueriesRetention) {
  const std::string path = ::testing::TempDir() + "/exchanges_test.db";
  std::remove(path.c_str());
  std::remove((path + "-wal").c_str());
  auto store = ExchangeStore::Open(path, ExchangeStore::Mode::kCreate);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        ExchangeRow row;
        const std::string day = i < 25 ? "2030-01-01" : "2030-02-01";
        FinishExchangeRow(
            Exchange("x" + std::to_string(t) + "-" + std::to_string(i), day + "T00:00:00.000Z",
                     "S" + std::to_string(i % 3), i % 10 == 0 ? "canary" : "traffic"),
            {}, &row);
        ASSERT_TRUE((*store)->Insert(row).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(*(*store)->Count(), 400);
  int n = 0;
  ExchangeQuery q;
  q.kind = "canary";
  ASSERT_TRUE((*store)
                  ->ForEach(q,
                            [&](const J&) {
                              ++n;
                              return Status::Ok();
                            })
                  .ok());
  EXPECT_EQ(n, 40);
  q = ExchangeQuery{};
  q.since = "2030-01-15T00:00:00+00:00";
  n = 0;
  ASSERT_TRUE((*store)
                  ->ForEach(q,
                            [&](const J&) {
                              ++n;
                              return Status::Ok();
                            })
                  .ok());
  EXPECT_EQ(n, 200);
  q = ExchangeQuery{};
  q.id = "x3-7";
  J got;
  ASSERT_TRUE((*store)
                  ->ForEach(q,
                            [&](const J& r) {
                              got = r;
                              return Status::Ok();
                            })
                  .ok());
  ASSERT_TRUE(got.is_object());
  auto snap = (*store)->Snapshot(got["snapshot"].get<std::string>());
  ASSERT_TRUE(snap.ok() && snap->has_value());
  EXPECT_EQ(**snap, R"({"system":[{"content":"S1","role":"system"}]})");
  q.id.clear();
  q.since = "yesterday";
  EXPECT_FALSE((*store)->ForEach(q, [](const J&) { return Status::Ok(); }).ok());
  ExchangeRow bad;
  bad.record = J{{"schema", "stet.record/1"}};
  EXPECT_FALSE((*store)->Insert(bad).ok());
  ExchangeRow dup;
  FinishExchangeRow(Exchange("x0-0", "2030-01-01T00:00:00.000Z"), {}, &dup);
  EXPECT_FALSE((*store)->Insert(dup).ok());  // ids are unique
  auto deleted = (*store)->DeleteBefore("2030-01-15T00:00:00Z");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 200);
  EXPECT_EQ(*(*store)->Count(), 200);
  store->reset();
  EXPECT_EQ(DetectStoreKind(path), StoreKind::kExchanges);
  EXPECT_EQ(DetectStoreKind(::testing::TempDir() + "/does-not-exist.db"), StoreKind::kUnknown);
  EXPECT_EQ(DetectStoreKind("postgresql://u@h/db"), StoreKind::kExchanges);
  EXPECT_EQ(MaskUrlPassword("postgresql://u:secret@h:5432/db"), "postgresql://u:***@h:5432/db");
  EXPECT_EQ(MaskUrlPassword("postgresql:///db?host=/tmp"), "postgresql:///db?host=/tmp");
  EXPECT_FALSE(
      ExchangeStore::Open(::testing::TempDir() + "/missing.db", ExchangeStore::Mode::kOpenExisting)
          .ok());
}

TEST(ReplayProxy, SessionsAndDepartures) {
  std::vector<ExchangeJson> recs;
  J m1 = J::array({{{"role", "user"}, {"content", "q"}}});
  J m2 = m1;
  m2.push_back({{"role", "assistant"}, {"tool_calls", J::array()}});
  m2.push_back({{"role", "tool"}, {"content", "r"}});
  J m3 = m2;
  m3.push_back({{"role", "assistant"}, {"content", "a"}});
  m3.push_back({{"role", "user"}, {"content", "q2"}});
  for (const J& m : {m1, J::array({{{"role", "user"}, {"content", "other"}}}), m2, m3}) {
    recs.push_back({{"request", {{"messages", m}}}, {"response", {{"id", "r"}}}});
  }
  recs.push_back({{"request", {{"input", "x"}, {"previous_response_id", "resp_9"}}}});
  recs.insert(recs.begin() + 4, J{{"request", {{"input", "y"}}}, {"response", {{"id", "resp_9"}}}});
  EXPECT_EQ(SessionsOf(recs), (std::vector<int>{1, 2, 1, 1, 3, 3}));

  auto chat = [](std::vector<std::pair<std::string, double>> toks, const std::string& finish) {
    J content = J::array();
    std::string text;
    for (auto& [t, lp] : toks) {
      content.push_back({{"token", t}, {"logprob", lp}});
      text += t;
    }
    return J{{"choices", J::array({{{"index", 0},
                                    {"message", {{"role", "assistant"}, {"content", text}}},
                                    {"logprobs", {{"content", content}}},
                                    {"finish_reason", finish}}})}};
  };
  bool tokens = false;
  EXPECT_FALSE(CompareAnswers("/v1/chat/completions", chat({{"a", -1}, {"b", -2}}, "stop"),
                              chat({{"a", -1.5}, {"b", -2}}, "stop"), &tokens));
  EXPECT_TRUE(tokens);
  auto d = CompareAnswers("/v1/chat/completions", chat({{"a", -1}, {"b", -2}, {"c", -3}}, "stop"),
                          chat({{"a", -1}, {"x", -0.5}}, "stop"), &tokens);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, "token");
  EXPECT_EQ(d->position, 1);
  EXPECT_EQ(d->recorded, "b");
  EXPECT_EQ(d->replayed, "x");
  EXPECT_EQ(*d->replayed_logprob, -0.5);
  EXPECT_EQ(d->context, "a");
  d = CompareAnswers("/v1/chat/completions", chat({{"a", -1}}, "stop"), chat({{"a", -1}}, "length"),
                     &tokens);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, "finish_reason");
  const J t1 = {{"choices", J::array({{{"index", 0}, {"text", "hello world"}}})}};
  const J t2 = {{"choices", J::array({{{"index", 0}, {"text", "hello there"}}})}};
  tokens = false;
  d = CompareAnswers("/v1/completions", t1, t2, &tokens);
  ASSERT_TRUE(d);
  EXPECT_FALSE(tokens);
  EXPECT_EQ(d->kind, "text");
  EXPECT_EQ(d->position, 6);
  const J tc1 = J::parse(
      R"({"choices":[{"index":0,"message":{"content":null,"tool_calls":[{"id":"1","function":{"name":"f","arguments":"{}"}}]}}]})");
  const J tc2 = J::parse(
      R"({"choices":[{"index":0,"message":{"content":null,"tool_calls":[{"id":"2","function":{"name":"g","arguments":"{}"}}]}}]})");
  d = CompareAnswers("/v1/chat/completions", tc1, tc2, &tokens);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, "tool_calls");
  const J r1 = J::parse(
      R"({"output":[{"type":"message","content":[{"type":"output_text","text":"ab"}]}],"status":"completed"})");
  EXPECT_FALSE(CompareAnswers("/v1/responses", r1, r1, &tokens));
}

// Standard normal draws from Philox (Box-Muller), for the simulations below.
double Normal(uint64_t seed, uint64_t i) {
  const double u1 = (UniformFloat(seed, 1, i) + 0.5f / 16777216.0f);
  const double u2 = UniformFloat(seed, 2, i);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

TEST(ReplayProxy, ClockPinnedFromTheRecordedInstant) {
  const std::string when = "2026-11-30T08:15:00.250Z";
  auto record = [&](const std::string& endpoint, J request) {
    return ExchangeJson{{"endpoint", endpoint},
                        {"status", 200},
                        {"outcome", "ok"},
                        {"received_at", when},
                        {"request", std::move(request)}};
  };
  const ExchangeJson chat = record(
      "/v1/chat/completions", {{"model", "m"},
                               {"stream", true},
                               {"messages", J::array({{{"role", "user"}, {"content", "q"}}})}});
  ProxyReplayOptions o;
  J body = ProxyReplayBody(chat, o);  // kNone: as it went upstream, less the stream
  EXPECT_FALSE(body.contains("metadata"));
  EXPECT_FALSE(body.contains("stream"));
  EXPECT_EQ(body["messages"].size(), 1u);

  o.clock = ProxyReplayOptions::Clock::kRecorded;
  body = ProxyReplayBody(chat, o);
  EXPECT_EQ(body["metadata"]["stet_clock"], when);
  EXPECT_EQ(body["messages"].size(), 1u);

  o.clock = ProxyReplayOptions::Clock::kRecordedNote;
  body = ProxyReplayBody(chat, o);
  EXPECT_EQ(body["metadata"]["stet_clock"], when);
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_NE(body["messages"][0]["content"].get<std::string>().find(when), std::string::npos);
  EXPECT_EQ(body["messages"][1]["content"], "q");

  // Responses: the note goes before the recorded instructions; client metadata is kept.
  body = ProxyReplayBody(
      record("/v1/responses",
             {{"input", "x"}, {"instructions", "Be brief."}, {"metadata", {{"team", "a"}}}}),
      o);
  EXPECT_EQ(body["metadata"]["team"], "a");
  EXPECT_EQ(body["metadata"]["stet_clock"], when);
  const std::string instr = body["instructions"];
  EXPECT_EQ(instr.substr(instr.size() - 9), "Be brief.");
  EXPECT_NE(instr.find(when), std::string::npos);
}

TEST(CanaryTest, PermutationPValueExactNull) {
  std::vector<std::vector<double>> same(12, std::vector<double>(10, -0.5));
  int64_t perms = 0;
  bool exact = false;
  double t = -1;
  EXPECT_EQ(PermutationPValue(same, {9, 10, 11}, 20000, 0, &perms, &exact, &t), 1.0);
  EXPECT_EQ(perms, 220);  // C(12, 3)
  EXPECT_TRUE(exact);
  EXPECT_EQ(t, 0.0);
  std::vector<std::vector<double>> v(12, std::vector<double>(10));
  for (int r = 0; r < 12; ++r) {
    for (int k = 0; k < 10; ++k)
      v[r][k] = -1.0 + 0.01 * Normal(3, r * 10 + k) + (r >= 9 ? 0.5 : 0.0);
  }
  EXPECT_DOUBLE_EQ(PermutationPValue(v, {9, 10, 11}, 20000, 0, &perms, &exact, &t), 1.0 / 220);
  EXPECT_NEAR(t, 0.5, 0.05);
  // Past the enumeration limit: Monte Carlo, (1 + hits) / (1 + draws).
  EXPECT_DOUBLE_EQ(PermutationPValue(v, {9, 10, 11}, 100, 0, &perms, &exact, &t), 1.0 / 101);
  EXPECT_FALSE(exact);
}

// The false-alarm rate of the canary test on a stable but noisy endpoint, and
// its power, by simulation: 2000 independent (9 baseline + 3 round runs) data
// sets, 20 positions each with its own mean, iid Gaussian run-to-run noise.
TEST(CanaryTest, FalseAlarmRateAndPowerBySimulation) {
  const int reps = 2000, n = 12, k = 20;
  int alarms = 0, hits = 0;
  for (int rep = 0; rep < reps; ++rep) {
    for (double shift : {0.0, 1.0}) {
      std::vector<std::vector<double>> v(n, std::vector<double>(k));
      for (int r = 0; r < n; ++r) {
        for (int j = 0; j < k; ++j) {
          const uint64_t i = (static_cast<uint64_t>(rep) * n + r) * k + j;
          v[r][j] = -0.2 * j + 0.1 * Normal(11, i) + (r >= 9 ? shift * 0.1 : 0.0);
        }
      }
      int64_t perms;
      bool exact;
      double t;
      const double p = PermutationPValue(v, {9, 10, 11}, 20000, 0, &perms, &exact, &t);
      (shift == 0 ? alarms : hits) += p <= 0.05;
    }
  }
  const double rate = static_cast<double>(alarms) / reps, power = static_cast<double>(hits) / reps;
  std::printf(
      "canary permutation test, alpha 0.05: false-alarm rate %.4f (%d of %d), power at a 1-sigma "
      "shift %.4f\n",
      rate, alarms, reps, power);
  // Exact size under the null: 11/220 = 0.05; 3 binomial standard deviations either way.
  EXPECT_NEAR(rate, 0.05, 3 * std::sqrt(0.05 * 0.95 / reps));
  EXPECT_GT(power, 0.9);
}

J CanaryRec(int run, int round, const std::string& fp,
            std::vector<std::pair<std::string, double>> toks) {
  J content = J::array();
  for (auto& [t, lp] : toks)
    content.push_back({{"token", t},
                       {"logprob", lp},
                       {"top_logprobs", J::array({{{"token", t}, {"logprob", lp}}})}});
  return J{
      {"schema", kExchangeSchema},
      {"id", "c" + std::to_string(run)},
      {"kind", "canary"},
      {"endpoint", "/v1/chat/completions"},
      {"received_at", "2030-01-01T00:00:0" + std::to_string(round) + ".000Z"},
      {"status", 200},
      {"outcome", "ok"},
      {"system_fingerprint", fp},
      {"model_answered", "m"},
      {"response", {{"choices", J::array({{{"index", 0}, {"logprobs", {{"content", content}}}}})}}},
      {"canary",
       {{"set", "s"}, {"round", round}, {"run", run}, {"prompt", "p"}, {"prompt_index", 0}}}};
}

TEST(CanaryTest, AnalysisFlagsFingerprintTokenAndLogprobs) {
  std::vector<ExchangeJson> recs;
  for (int r = 0; r < 4; ++r) recs.push_back(CanaryRec(r, 1, "fp1", {{"a", -0.1}, {"b", -0.2}}));
  for (int r = 4; r < 6; ++r)
    recs.push_back(CanaryRec(r, 2, "fp1", {{"a", -0.1}, {"b", -0.2}}));  // unchanged
  for (int r = 6; r < 8; ++r)
    recs.push_back(CanaryRec(r, 3, "fp2", {{"a", -0.1}, {"b", -0.2}}));  // new fingerprint
  for (int r = 8; r < 10; ++r)
    recs.push_back(CanaryRec(r, 4, "fp1", {{"a", -0.1}, {"c", -0.2}}));  // new token
  CanaryTestOptions o;
  o.baseline_runs = 4;
  o.alpha = 0.2;
  auto a = AnalyzeCanary(recs, o);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(a->rounds.size(), 4u);
  EXPECT_TRUE(a->rounds[0].baseline);
  EXPECT_TRUE(a->rounds[1].flags.empty());
  EXPECT_EQ(a->rounds[1].p_value, 1.0);
  EXPECT_EQ(a->rounds[1].permutations, 15);  // C(6, 2)
  EXPECT_EQ(a->rounds[2].flags, std::vector<std::string>{"fingerprint"});
  EXPECT_EQ(a->rounds[3].flags, std::vector<std::string>{"token"});
  EXPECT_EQ(a->rounds[3].positions, 1);  // only position 0 is shared by every run
  EXPECT_EQ(a->tested, 3);
  EXPECT_EQ(a->flagged, 2);
  EXPECT_NE(CanaryHtml(*a).find("<svg"), std::string::npos);
  EXPECT_NE(CanaryText(*a).find("2 of 3 tested round(s) flagged"), std::string::npos);
  o.baseline_runs = 1;
  EXPECT_FALSE(AnalyzeCanary(recs, o).ok());
}

}  // namespace
}  // namespace stet::forensics
