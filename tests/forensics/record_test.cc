// Record and replay without a network peer: the frozen clock (parsing and its
// effect on a chat template), the record a server builds and commits before
// it answers (in process, with fake recorders that fail or block), the SQLite
// store (group commit from many threads, selection, import, bad input),
// replay's comparison on synthetic records, and the probe verdict when only
// logprobs move.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/hash.h"
#include "base/utc_time.h"
#include "forensics/analysis/probe.h"
#include "forensics/replay/replay.h"
#include "forensics/store/record_store.h"
#include "server/openai/chat_prompt.h"
#include "server/record_builder.h"
#include "server/server.h"
#include "support/stories_engine.h"
#include "support/test_support.h"

namespace stet {
namespace {

using OJson = nlohmann::ordered_json;

std::string TempPath(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp ? tmp : "/tmp") + "/stet-record-test-" + std::to_string(::getpid()) + "-" +
         name;
}

void RemoveDb(const std::string& p) {
  for (const char* s : {"", "-wal", "-shm"}) std::remove((p + s).c_str());
}

// ---------------------------------------------------------------------------
// Frozen clock

TEST(StetClock, ParsesIso8601WithZones) {
  using server::ParseUtcTime;
  EXPECT_EQ(ParseUtcTime("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(ParseUtcTime("2024-07-26T12:00:00Z"),
            1721995200);  // ChatTemplateOptions' default instant
  EXPECT_EQ(ParseUtcTime("2024-07-26T14:00:00.750+02:00"), 1721995200);
  EXPECT_EQ(ParseUtcTime("2024-07-26T07:30:00-04:30"), 1721995200);
  EXPECT_EQ(ParseUtcTime("2024-02-29T00:00:00Z"), 1709164800);
  EXPECT_EQ(ParseUtcTime("2031-02-03T04:05:06Z"), 1927857906);
  EXPECT_FALSE(ParseUtcTime("2023-02-29T00:00:00Z"));  // not a leap year
  EXPECT_FALSE(ParseUtcTime("2024-07-26T12:00:00"));   // no zone
  EXPECT_FALSE(ParseUtcTime("2024-07-26"));
  EXPECT_FALSE(ParseUtcTime("1969-12-31T23:59:59Z"));
  EXPECT_FALSE(ParseUtcTime("2024-13-01T00:00:00Z"));
  EXPECT_FALSE(ParseUtcTime("2024-07-26T12:00:00Zjunk"));
  EXPECT_FALSE(ParseUtcTime("2024-07-26T12:00:00."));
  EXPECT_EQ(server::FormatUtcTime(1721995200), "2024-07-26T12:00:00Z");
  const std::string now = NowIso8601();
  ASSERT_EQ(now.size(), 24u) << now;
  EXPECT_TRUE(ParseUtcTime(now).has_value()) << now;
}

TEST(StetClock, MetadataField) {
  using server::ReadStetClock;
  auto none = ReadStetClock(OJson::parse(R"({"model": "m"})"));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto other = ReadStetClock(OJson::parse(R"({"metadata": {"user": "x"}})"));
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->has_value());
  auto ok = ReadStetClock(OJson::parse(R"({"metadata": {"stet_clock": "2024-07-26T12:00:00Z"}})"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(**ok, 1721995200);
  auto bad = ReadStetClock(OJson::parse(R"({"metadata": {"stet_clock": "yesterday"}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().status, 400);
  EXPECT_EQ(bad.error().param, "metadata.stet_clock");
  auto num = ReadStetClock(OJson::parse(R"({"metadata": {"stet_clock": 17}})"));
  ASSERT_FALSE(num.ok());
}

std::string Stories() { return testing::StoriesPath(); }

std::unique_ptr<Tokenizer> StoriesTokenizer() {
  auto loaded = LoadModelAndTokenizer(Stories());
  return loaded.ok() ? std::move(loaded->tokenizer) : nullptr;
}

TEST(StetClock, PinsTheTemplatesStrftimeNow) {
  STET_REQUIRE_FILE(Stories());
  auto tok = StoriesTokenizer();
  ASSERT_TRUE(tok);
  auto chat = server::ChatPrompt::Create(
      "Today is {{ strftime_now('%d %b %Y') }}. {{ messages[0]['content'] }}", *tok);
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  const OJson msgs = OJson::parse(R"([{"role": "user", "content": "hi"}])");
  std::string a, b;
  ASSERT_TRUE(chat->Build(msgs, nullptr, &a).ok());
  ASSERT_TRUE(chat->Build(msgs, nullptr, &b, server::ParseUtcTime("2031-02-03T04:05:06Z")).ok());
  EXPECT_EQ(a, "Today is 26 Jul 2024. hi");  // the server's default instant
  EXPECT_EQ(b, "Today is 03 Feb 2031. hi");
}

// ---------------------------------------------------------------------------
// The server commits the record before it answers.

class FakeRecorder : public server::RequestRecorder {
 public:
  Status Record(const nlohmann::ordered_json& record) override {
    std::unique_lock<std::mutex> lock(mu);
    ++calls;
    cv.notify_all();
    cv.wait(lock, [&] { return !hold; });
    if (fail) return IoError("disk full");
    records.push_back(record);
    return Status::Ok();
  }
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  bool hold = false;
  bool fail = false;
  std::vector<OJson> records;
};

using testing::StoriesEngine;

struct InProcess {
  std::shared_ptr<FakeRecorder> rec = std::make_shared<FakeRecorder>();
  std::unique_ptr<server::Server> srv;
  std::string fingerprint, model_sha;
  bool Start() {
    server::ServerOptions o;
    o.port = 0;
    o.log_requests = false;
    o.recorder = rec;
    auto s = server::Server::Start(o);
    if (!s.ok()) return false;
    srv = std::move(*s);
    auto engine = StoriesEngine();
    if (!engine) return false;
    fingerprint = engine->fingerprint();
    model_sha = engine->model_sha256();
    server::ModelInfo info;
    info.names = server::ModelNames(Stories(), "llama");
    return srv->Attach(std::move(engine), info).ok();
  }
  ~InProcess() {
    if (srv) {
      srv->Shutdown();
      srv->Wait();
    }
  }
};

TEST(ServerRecord, RecordsWhatShapedTheAnswer) {
  STET_REQUIRE_FILE(Stories());
  InProcess p;
  ASSERT_TRUE(p.Start());
  httplib::Client cli("127.0.0.1", p.srv->port());
  auto r = cli.Post(
      "/v1/chat/completions",
      R"({"model": "llama", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 6,
                        "temperature": 0.9, "return_token_ids": true, "metadata": {"stet_clock": "2031-02-03T04:05:06Z"}})",
      "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const OJson body = OJson::parse(r->body);
  ASSERT_EQ(p.rec->records.size(), 1u);
  const OJson& rec = p.rec->records[0];
  EXPECT_EQ(rec["schema"], "stet.record/1");
  EXPECT_EQ(rec["id"], body["id"]);
  EXPECT_EQ(rec["seed"], body["seed"]);
  EXPECT_TRUE(rec["seed_generated"].get<bool>());
  EXPECT_EQ(rec["system_fingerprint"], p.fingerprint);
  EXPECT_EQ(rec["model_sha256"], p.model_sha);
  const std::string fallback(FindBuiltinTemplate("chatml")->source);
  EXPECT_EQ(rec["chat_template_sha256"], Sha256Hex(fallback.data(), fallback.size()));
  EXPECT_TRUE(rec["chat_template_fallback"].get<bool>());
  EXPECT_EQ(rec["clock"]["unix"], 1927857906);
  EXPECT_EQ(rec["clock"]["source"], "metadata.stet_clock");
  EXPECT_EQ(rec["request"]["metadata"]["stet_clock"], "2031-02-03T04:05:06Z");
  EXPECT_EQ(rec["params"][0]["seed"], body["seed"]);
  EXPECT_FLOAT_EQ(rec["params"][0]["temperature"].get<float>(), 0.9f);
  EXPECT_EQ(rec["prompt_token_ids"][0], body["prompt_token_ids"]);
  EXPECT_EQ(rec["choices"][0]["token_ids"], body["choices"][0]["token_ids"]);
  EXPECT_EQ(rec["choices"][0]["text"], body["choices"][0]["message"]["content"]);
  EXPECT_EQ(rec["choices"][0]["logprobs"].size(), rec["choices"][0]["token_ids"].size());
  EXPECT_EQ(rec["usage"], body["usage"]);

  // A request the server rejects is not recorded.
  r = cli.Post("/v1/completions",
               R"({"model": "llama", "prompt": "x", "metadata": {"stet_clock": "soon"}})",
               "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(p.rec->records.size(), 1u);
}

TEST(ServerRecord, AnswerWaitsForTheRecord) {
  STET_REQUIRE_FILE(Stories());
  InProcess p;
  ASSERT_TRUE(p.Start());
  p.rec->hold = true;
  for (bool stream : {false, true}) {
    std::atomic<bool> answered{false};
    std::string got;
    std::thread client([&] {
      httplib::Client cli("127.0.0.1", p.srv->port());
      auto r = cli.Post(
          "/v1/completions",
          std::string(R"({"model": "llama", "prompt": "Once upon a time", "max_tokens": 4)") +
              (stream ? R"(, "stream": true})" : "}"),
          "application/json");
      if (r) got = r->body;
      answered = true;
    });
    {
      std::unique_lock<std::mutex> lock(p.rec->mu);
      p.rec->cv.wait_for(lock, std::chrono::seconds(30),
                         [&] { return p.rec->calls > (stream ? 1 : 0); });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(answered) << "the answer went out before the record was committed (stream="
                           << stream << ")";
    if (stream) {
      EXPECT_EQ(got.find("[DONE]"), std::string::npos);
    }
    {
      std::lock_guard<std::mutex> lock(p.rec->mu);
      p.rec->hold = false;
    }
    p.rec->cv.notify_all();
    client.join();
    EXPECT_TRUE(answered);
    if (stream) {
      EXPECT_NE(got.find("data: [DONE]"), std::string::npos) << got;
    }
    std::lock_guard<std::mutex> lock(p.rec->mu);
    p.rec->hold = true;
  }
  p.rec->hold = false;
}

TEST(ServerRecord, FailedRecordWithholdsTheAnswer) {
  STET_REQUIRE_FILE(Stories());
  InProcess p;
  ASSERT_TRUE(p.Start());
  p.rec->fail = true;
  httplib::Client cli("127.0.0.1", p.srv->port());
  auto r = cli.Post("/v1/completions", R"({"model": "llama", "prompt": "Once", "max_tokens": 3})",
                    "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "record_failed");
  // The stream ends without its terminating chunk, so read the bytes as they come.
  std::string body;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = R"({"model": "llama", "prompt": "Once", "max_tokens": 3, "stream": true})";
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    body.append(data, n);
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  cli.send(req, res, err);
  EXPECT_NE(body.find("record_failed"), std::string::npos) << body;
  EXPECT_EQ(body.find("[DONE]"), std::string::npos) << body;
}

// ---------------------------------------------------------------------------
// Store

OJson Rec(const std::string& id, const std::string& received = "2025-01-02T03:04:05.000Z") {
  OJson r = OJson::object();
  r["schema"] = "stet.record/1";
  r["id"] = id;
  r["endpoint"] = "/v1/completions";
  r["received_at"] = received;
  r["completed_at"] = received;
  r["system_fingerprint"] = "fp_000000000000";
  r["model_sha256"] = std::string(64, 'a');
  r["seed"] = 42;
  r["request"] =
      OJson::parse(R"({"model": "m", "prompt": "Once", "max_tokens": 3, "logprobs": 1})");
  r["params"] = OJson::parse(R"([{"n": 1}])");
  r["prompt_token_ids"] = OJson::parse("[[1, 403]]");
  r["choices"] = OJson::parse(
      R"([{"index": 0, "text": " a b c", "token_ids": [5, 6, 7], "tokens": [" a", " b", " c"],
           "logprobs": [-0.5, -0.25, -1.5], "finish_reason": "length"}])");
  return r;
}

TEST(RecordStore, GroupCommitFromManyThreads) {
  const std::string db = TempPath("group.db");
  RemoveDb(db);
  auto store = forensics::RecordStore::Open(db, forensics::RecordStore::Mode::kCreate);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        if (!(*store)->Insert(Rec("r" + std::to_string(t) + "-" + std::to_string(i))).ok())
          ++failures;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(*(*store)->Count(), 200);
  // A duplicate id is refused, the others in its batch are not affected.
  EXPECT_FALSE((*store)->Insert(Rec("r0-0")).ok());
  OJson bad = Rec("x");
  bad.erase("seed");
  EXPECT_FALSE((*store)->Insert(bad).ok());
  EXPECT_EQ(*(*store)->Count(), 200);
  store->reset();
  // Reopened as an existing store: everything is there.
  auto again = forensics::RecordStore::Open(db, forensics::RecordStore::Mode::kOpenExisting);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*(*again)->Count(), 200);
  RemoveDb(db);
}

TEST(RecordStore, SelectionImportAndBadFiles) {
  const std::string db = TempPath("sel.db");
  RemoveDb(db);
  auto store = forensics::RecordStore::Open(db, forensics::RecordStore::Mode::kCreate);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Insert(Rec("a", "2025-01-01T00:00:00.000Z")).ok());
  ASSERT_TRUE((*store)->Insert(Rec("b", "2025-01-01T00:00:00.500Z")).ok());
  ASSERT_TRUE((*store)->Insert(Rec("c", "2025-03-01T00:00:00.000Z")).ok());
  auto ids = [&](forensics::RecordQuery q) {
    std::vector<std::string> out;
    EXPECT_TRUE((*store)
                    ->ForEach(q,
                              [&](const std::string& t) {
                                out.push_back(OJson::parse(t)["id"]);
                                return Status::Ok();
                              })
                    .ok());
    return out;
  };
  EXPECT_EQ(ids({}), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ids({"b", ""}), (std::vector<std::string>{"b"}));
  // "...00Z" sorts after "...00.500Z" as text; the comparison is by time.
  EXPECT_EQ(ids({"", "2025-01-01T00:00:00Z"}), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ids({"", "2025-01-01T01:00:00+01:00"}), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ids({"", "2025-02-01T00:00:00Z"}), (std::vector<std::string>{"c"}));
  EXPECT_FALSE((*store)
                   ->ForEach({"", "last tuesday"}, [](const std::string&) { return Status::Ok(); })
                   .ok());

  auto stats = (*store)->InsertAll({Rec("a"), Rec("d"), Rec("e")});
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->inserted, 2);
  EXPECT_EQ(stats->duplicates, 1);
  EXPECT_EQ(*(*store)->Count(), 5);

  const std::string jl = TempPath("bad.jsonl");
  {
    std::ofstream f(jl);
    f << Rec("z").dump() << "\n\n"
      << R"({"schema": "stet.record/1", "id": "y"})"
      << "\n";
  }
  auto bad = forensics::ReadRecordsJsonl(jl);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.jsonl:3:"), std::string::npos)
      << bad.status().message();
  std::remove(jl.c_str());

  const std::string notdb = TempPath("notdb.db");
  {
    std::ofstream f(notdb);
    f << "this is not a database, just some text long enough to have a header of sorts............";
  }
  EXPECT_FALSE(
      forensics::RecordStore::Open(notdb, forensics::RecordStore::Mode::kOpenExisting).ok());
  std::remove(notdb.c_str());
  EXPECT_FALSE(forensics::RecordStore::Open(TempPath("missing.db"),
                                            forensics::RecordStore::Mode::kOpenExisting)
                   .ok());
  RemoveDb(db);
}

// ---------------------------------------------------------------------------
// Replay comparison

OJson Answer() {
  return OJson::parse(
      R"({"id": "cmpl-x", "system_fingerprint": "fp_000000000000", "choices": [{"index": 0,
      "text": " a b c", "finish_reason": "length", "prompt_token_ids": [1, 403], "token_ids": [5, 6, 7],
      "logprobs": {"tokens": [" a", " b", " c"], "token_logprobs": [-0.5, -0.25, -1.5],
                   "top_logprobs": [null, null, null], "text_offset": [0, 2, 4]}}]})");
}

TEST(ReplayCompare, IdenticalAndTheRequestItSends) {
  const auto o = forensics::CompareReplay(Rec("a"), Answer());
  EXPECT_EQ(o.verdict, forensics::ReplayVerdict::kIdentical);
  EXPECT_TRUE(o.token_ids_compared);
  EXPECT_TRUE(o.logprobs_compared);
  EXPECT_EQ(o.tokens, 3);
  OJson chat = Rec("c");
  chat["endpoint"] = "/v1/chat/completions";
  chat["request"] =
      OJson::parse(R"({"model": "m", "messages": [], "stream": true, "stream_options": {}})");
  chat["clock"] =
      OJson::parse(R"({"unix": 0, "utc": "1970-01-01T00:00:00Z", "source": "server default"})");
  forensics::ReplayOptions opt;
  opt.model = "other";
  const OJson body = forensics::ReplayRequestBody(chat, opt);
  EXPECT_EQ(body["seed"], 42);
  EXPECT_FALSE(body.contains("stream"));
  EXPECT_FALSE(body.contains("stream_options"));
  EXPECT_TRUE(body["return_token_ids"].get<bool>());
  EXPECT_EQ(body["model"], "other");
  EXPECT_EQ(body["metadata"]["stet_clock"], "1970-01-01T00:00:00Z");
  EXPECT_FALSE(body.contains("logprobs"));
  opt.force_logprobs = true;
  EXPECT_TRUE(forensics::ReplayRequestBody(chat, opt)["logprobs"].get<bool>());
  EXPECT_EQ(forensics::ReplayRequestBody(Rec("a"), opt)["logprobs"],
            1);  // the recorded value stays
}

TEST(ReplayCompare, FindsTheFirstDivergence) {
  OJson tok = Answer();
  tok["choices"][0]["token_ids"][1] = 9;
  tok["choices"][0]["logprobs"]["tokens"][1] = " z";
  tok["choices"][0]["text"] = " a z c";
  auto o = forensics::CompareReplay(Rec("a"), tok);
  ASSERT_EQ(o.verdict, forensics::ReplayVerdict::kDiverged);
  ASSERT_TRUE(o.divergence);
  EXPECT_EQ(o.divergence->kind, "token");
  EXPECT_EQ(o.divergence->position, 1);
  EXPECT_EQ(o.divergence->recorded_id, 6);
  EXPECT_EQ(o.divergence->replayed_id, 9);
  EXPECT_EQ(o.divergence->recorded_token, " b");
  EXPECT_EQ(o.divergence->replayed_token, " z");
  EXPECT_EQ(o.divergence->context, " a ");
  EXPECT_EQ(o.divergence->recorded_continuation, "b c");
  EXPECT_EQ(o.divergence->replayed_continuation, "z c");
  const std::string line = forensics::ReplayOutcomeText(o);
  EXPECT_NE(line.find("token 1: recorded id 6 \" b\""), std::string::npos) << line;

  // One ulp in one logprob is a divergence.
  OJson lp = Answer();
  lp["choices"][0]["logprobs"]["token_logprobs"][2] = std::nextafter(-1.5, 0.0);
  o = forensics::CompareReplay(Rec("a"), lp);
  ASSERT_TRUE(o.divergence);
  EXPECT_EQ(o.divergence->kind, "logprob");
  EXPECT_EQ(o.divergence->position, 2);

  OJson prompt = Answer();
  prompt["choices"][0]["prompt_token_ids"][1] = 404;
  o = forensics::CompareReplay(Rec("a"), prompt);
  ASSERT_TRUE(o.divergence);
  EXPECT_EQ(o.divergence->kind, "prompt");

  OJson shorter = Answer();
  shorter["choices"][0]["token_ids"] = OJson::parse("[5, 6]");
  shorter["choices"][0]["finish_reason"] = "stop";
  o = forensics::CompareReplay(Rec("a"), shorter);
  ASSERT_TRUE(o.divergence);
  EXPECT_EQ(o.divergence->kind, "token");
  EXPECT_EQ(o.divergence->position, 2);
  EXPECT_NE(o.divergence->replayed_value.find("ended"), std::string::npos);

  OJson two = Answer();
  two["choices"].push_back(two["choices"][0]);
  o = forensics::CompareReplay(Rec("a"), two);
  ASSERT_TRUE(o.divergence);
  EXPECT_EQ(o.divergence->kind, "choices");

  // Without logprobs or ids in the answer, text decides.
  OJson text_only =
      OJson::parse(R"({"choices": [{"index": 0, "text": " a b d", "finish_reason": "length"}]})");
  o = forensics::CompareReplay(Rec("a"), text_only);
  ASSERT_TRUE(o.divergence);
  EXPECT_EQ(o.divergence->kind, "text");
  EXPECT_FALSE(o.token_ids_compared);
}

TEST(ReplayCompare, EchoedPromptIsNotPartOfTheAnswer) {
  OJson rec = Rec("a");
  rec["request"]["echo"] = true;
  OJson ans = Answer();
  ans["choices"][0]["text"] = "Once a b c";
  ans["choices"][0]["logprobs"] = OJson::parse(R"({"tokens": ["Once", " upon", " a", " b", " c"],
      "token_logprobs": [null, -3.0, -0.5, -0.25, -1.5]})");
  const auto o = forensics::CompareReplay(rec, ans);
  EXPECT_EQ(o.verdict, forensics::ReplayVerdict::kIdentical) << forensics::ReplayOutcomeText(o);
}

// Issue 12: a record of a request with "echo": null (which the server reads as
// absent) aborted the whole replay with nlohmann's type_error.302.
TEST(ReplayCompare, NullAndWronglyTypedFieldsReadAsTheServerReadsThem) {
  forensics::ReplayOptions force;
  force.force_logprobs = true;
  for (const OJson& v : {OJson(nullptr), OJson("yes"), OJson(1), OJson::array()}) {
    OJson rec = Rec("a");
    rec["request"]["echo"] = v;
    rec["request"]["logprobs"] = v;
    const auto o = forensics::CompareReplay(rec, Answer());
    EXPECT_EQ(o.verdict, forensics::ReplayVerdict::kIdentical) << v.dump();
    const OJson body = forensics::ReplayRequestBody(rec, force);
    if (v.is_null()) {
      EXPECT_EQ(body["logprobs"], 0);  // null is absent: asked for
    }
    OJson chat = rec;
    chat["endpoint"] = "/v1/chat/completions";
    EXPECT_EQ(forensics::ReplayRequestBody(chat, force)["logprobs"], true) << v.dump();
  }
  // An answer whose fields have other types is compared, not thrown on.
  OJson odd = Answer();
  odd["choices"][0]["index"] = "0";
  odd["choices"][0]["logprobs"]["top_logprobs"] = 5;
  EXPECT_EQ(forensics::CompareReplay(Rec("a"), odd).verdict, forensics::ReplayVerdict::kIdentical);
}

// ---------------------------------------------------------------------------
// Probe: logprobs that move while the text does not are a divergence.

forensics::Completion ProbeRun(double lp) {
  forensics::Completion c;
  c.has_logprobs = true;
  c.text = " a b";
  c.system_fingerprint = "fp_1";
  c.tokens = {{" a", -0.5, {{" a", -0.5}}}, {" b", lp, {{" b", lp}}}};
  return c;
}

TEST(ProbeVerdict, LogprobsThatMoveAreADivergence) {
  forensics::ProbeResult r;
  r.options.request.prompt = "p";
  std::vector<forensics::Completion> all;
  for (int c : {1, 8}) {
    forensics::LevelResult lr;
    lr.concurrency = c;
    lr.runs = {ProbeRun(-1.0), ProbeRun(c == 1 ? -1.0 : std::nextafter(-1.0, 0.0)), ProbeRun(-1.0)};
    lr.analysis = forensics::AnalyzeRuns(lr.runs);
    all.insert(all.end(), lr.runs.begin(), lr.runs.end());
    r.levels.push_back(lr);
  }
  r.overall = forensics::AnalyzeRuns(all);
  forensics::Judge(&r);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.verdict,
            "nondeterministic logits: the same text in every run, but 2 distinct logprob traces of "
            "3 runs at "
            "concurrency 8; the earliest differing logprob is at token 1");
  // And the same runs with equal logprobs are deterministic.
  for (auto& lr : r.levels) {
    lr.runs = {ProbeRun(-1.0), ProbeRun(-1.0)};
    lr.analysis = forensics::AnalyzeRuns(lr.runs);
  }
  r.overall = forensics::AnalyzeRuns({ProbeRun(-1.0)});
  forensics::Judge(&r);
  EXPECT_EQ(r.exit_code, 0);
}

}  // namespace
}  // namespace stet
