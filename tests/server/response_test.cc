// Response building without a network: OpenAI's shapes for completions and
// chat (fingerprint and seed on every object), legacy and chat logprobs,
// vLLM's prompt_logprobs and streamed token ids,
// stream chunks whose texts concatenate to the non-streamed text, the
// Prometheus exposition, and the chat prompt (ChatML fallback, BOS once) on
// stories260K's real vocabulary.
#include "server/openai/response.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "server/job.h"
#include "server/metrics.h"
#include "server/openai/chat_format.h"
#include "server/openai/chat_prompt.h"
#include "server/openai/completions_format.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"

namespace stet::server {
namespace {

std::string FakePiece(int32_t id) {
  if (id == 9) return "\xE2\x82";  // the first two bytes of '€'
  return "t" + std::to_string(id);
}

TokenOut Tok(int32_t id, float lp, std::vector<TokenLogprob> top = {}) {
  TokenOut t;
  t.id = id;
  t.logprob = lp;
  t.top = std::move(top);
  t.text = FakePiece(id);
  return t;
}

ResponseMeta Meta() {
  ResponseMeta m;
  m.id = "cmpl-1";
  m.created = 7;
  m.model = "m";
  m.fingerprint = "fp_abc";
  m.seed = 99;
  return m;
}

Json ParseSse(const std::string& s) {
  EXPECT_EQ(s.rfind("data: ", 0), 0u) << s;
  EXPECT_EQ(s.substr(s.size() - 2), "\n\n");
  return Json::parse(s.substr(6, s.size() - 8));
}

TEST(Response, CompletionShapeWithEchoAndLogprobs) {
  ChoiceResult c;
  c.text = "t3t4";
  c.prompt_tokens = {Tok(1, 0), Tok(2, -0.5f, {{2, -0.5f}, {5, -1.0f}})};
  c.tokens = {Tok(3, -0.25f, {{3, -0.25f}, {6, -2.0f}}),
              Tok(4, -0.125f, {{4, -0.125f}, {3, -3.0f}})};
  c.finish = FinishReason::kLength;
  UsageCounts u{2, 2, 0};
  Json j = CompletionResponse(Meta(), {c}, {"t1t2"}, 2, u, FakePiece);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["system_fingerprint"], "fp_abc");
  EXPECT_EQ(j["seed"], 99);
  const Json& ch = j["choices"][0];
  EXPECT_EQ(ch["text"], "t1t2t3t4");
  EXPECT_EQ(ch["finish_reason"], "length");
  const Json& lp = ch["logprobs"];
  EXPECT_EQ(lp["tokens"], Json({"t1", "t2", "t3", "t4"}));
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_EQ(lp["token_logprobs"][1], -0.5f);
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["top_logprobs"][2]["t6"], -2.0f);
  EXPECT_EQ(lp["text_offset"], Json({0, 2, 4, 6}));
  EXPECT_EQ(j["usage"]["total_tokens"], 4);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
}

TEST(Response, PromptLogprobsInVllmsShape) {
  // The second prompt token (3) is the best; the third (4) is outside the top 2.
  const std::vector<TokenOut> prompt = {Tok(1, 0),
                                        Tok(3, -0.25f, {{3, -0.25f}, {6, -2.0f}, {7, -3.0f}}),
                                        Tok(4, -5.0f, {{5, -0.5f}, {6, -1.0f}})};
  const Json j = PromptLogprobsJson(prompt, 2, FakePiece);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_TRUE(j[0].is_null());
  EXPECT_EQ(j[1], Json::parse(R"({"3": {"logprob": -0.25, "rank": 1, "decoded_token": "t3"},
                                  "6": {"logprob": -2.0, "rank": 2, "decoded_token": "t6"}})"));
  EXPECT_EQ(j[2]["4"]["logprob"], -5.0f);
  EXPECT_TRUE(j[2]["4"]["rank"].is_null());
  EXPECT_EQ(j[2]["5"]["rank"], 1);
  EXPECT_EQ(j[2].size(), 3u);
  EXPECT_EQ(PromptLogprobsJson(prompt, 0, FakePiece)[2].size(), 1u);  // k = 0: the token alone
  // Without echo, prompt scores stay out of the legacy logprobs.
  ChoiceResult c;
  c.text = "t3";
  c.prompt_tokens = prompt;
  c.tokens = {Tok(3, -0.25f, {{3, -0.25f}})};
  const Json r = CompletionResponse(Meta(), {c}, {}, 1, UsageCounts{3, 1, 0}, FakePiece);
  EXPECT_EQ(r["choices"][0]["logprobs"]["tokens"], Json({"t3"}));
  EXPECT_EQ(r["choices"][0]["logprobs"]["text_offset"], Json({0}));
}

TEST(Response, StreamedTokenIds) {
  CompletionStream cs(Meta(), 2, std::nullopt, false, FakePiece);
  cs.SetTokenIds({{1, 2}}, 2);
  TokenOut t = Tok(3, -0.5f);
  // A token whose text is held back still has its chunk; the first chunk of a choice has the
  // prompt.
  Json a = ParseSse(cs.Token(1, "", &t));
  EXPECT_EQ(a["choices"][0]["token_ids"], Json({3}));
  EXPECT_EQ(a["choices"][0]["prompt_token_ids"], Json({1, 2}));
  Json b = ParseSse(cs.Finish(1, "t3", FinishReason::kStop));
  EXPECT_EQ(b["choices"][0]["token_ids"], Json::array());
  EXPECT_FALSE(b["choices"][0].contains("prompt_token_ids"));
  EXPECT_EQ(ParseSse(cs.Finish(0, "", FinishReason::kStop))["choices"][0]["prompt_token_ids"],
            Json({1, 2}));
  ChatStream chat(Meta(), false, 0, false, FakePiece);
  chat.SetTokenIds({1, 2});
  EXPECT_EQ(ParseSse(chat.Start(0))["prompt_token_ids"], Json({1, 2}));
  EXPECT_EQ(ParseSse(chat.Token(0, "", &t, {}))["choices"][0]["token_ids"], Json({3}));
}

TEST(Response, ChatShapeAndBytesOfPartialCharacters) {
  ChoiceResult c;
  c.text = "hello";
  c.tokens = {Tok(9, -0.5f, {{9, -0.5f}, {1, -1.5f}})};
  c.finish = FinishReason::kStop;
  Json j = ChatResponse(Meta(), {c}, true, 1, UsageCounts{5, 1, 3}, FakePiece);
  EXPECT_EQ(j["object"], "chat.completion");
  const Json& ch = j["choices"][0];
  EXPECT_EQ(ch["message"]["role"], "assistant");
  EXPECT_EQ(ch["message"]["content"], "hello");
  EXPECT_EQ(ch["finish_reason"], "stop");
  const Json& e = ch["logprobs"]["content"][0];
  EXPECT_EQ(e["token"], "\xEF\xBF\xBD");      // U+FFFD in the string...
  EXPECT_EQ(e["bytes"], Json({0xE2, 0x82}));  // ...the exact bytes beside it
  ASSERT_EQ(e["top_logprobs"].size(), 1u);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
  EXPECT_NO_THROW(Dump(j));
}

TEST(Response, CompletionStreamConcatenatesToTheFullText) {
  CompletionStream cs(Meta(), 2, std::nullopt, true, FakePiece);
  std::string text0;
  for (const std::string d : {"Hel", "", "lo"}) {
    const std::string chunk = cs.Token(0, d, nullptr);
    if (d[0] == '\0') {
      EXPECT_EQ(chunk, "");  // nothing to send
      continue;
    }
    Json j = ParseSse(chunk);
    EXPECT_EQ(j["choices"][0]["index"], 0);
    EXPECT_TRUE(j["usage"].is_null());
    EXPECT_EQ(j["system_fingerprint"], "fp_abc");
    text0 += j["choices"][0]["text"].get<std::string>();
  }
  Json fin = ParseSse(cs.Finish(0, "!", FinishReason::kStop));
  text0 += fin["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(text0, "Hello!");
  Json usage = ParseSse(cs.Usage(UsageCounts{3, 4, 0}));
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 4);
}

TEST(Response, CompletionStreamLogprobOffsetsFollowTheText) {
  CompletionStream cs(Meta(), 1, 1, false, FakePiece);
  Json e = ParseSse(cs.Echo(0, "t1t2", {Tok(1, 0), Tok(2, -1.0f, {{2, -1.0f}})}));
  EXPECT_EQ(e["choices"][0]["logprobs"]["text_offset"], Json({0, 2}));
  TokenOut t = Tok(3, -0.5f, {{3, -0.5f}});
  Json j = ParseSse(cs.Token(0, "t3", &t));
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"][0], 4);
  EXPECT_EQ(cs.Usage(UsageCounts{}), "");  // include_usage off
}

TEST(Response, ChatStreamStartsWithTheRole) {
  ChatStream cs(Meta(), false, 0, false, FakePiece);
  Json s = ParseSse(cs.Start(0));
  EXPECT_EQ(s["object"], "chat.completion.chunk");
  EXPECT_EQ(s["choices"][0]["delta"]["role"], "assistant");
  EXPECT_FALSE(s.contains("usage"));
  Json t = ParseSse(cs.Token(0, "hi", nullptr, {}));
  EXPECT_EQ(t["choices"][0]["delta"]["content"], "hi");
  Json f = ParseSse(cs.Finish(0, "", FinishReason::kLength, {}));
  EXPECT_TRUE(f["choices"][0]["delta"].empty());
  EXPECT_EQ(f["choices"][0]["finish_reason"], "length");
}

TEST(Collector, NumbersChoicesPromptMajorAndCountsUsage) {
  Collector c(2, 2, {5, 7}, Clock::now());
  bool shown = false;
  auto ev = [](RequestEvent::Kind k, int choice) {
    RequestEvent e;
    e.kind = k;
    e.choice = choice;
    return e;
  };
  RequestEvent tok = ev(RequestEvent::Kind::kToken, 1);
  tok.text_delta = "x";
  tok.token = Tok(4, -1.0f);
  EXPECT_EQ(c.Apply({1, tok, Clock::now()}, &shown), 3);
  EXPECT_TRUE(shown);
  RequestEvent eos = ev(RequestEvent::Kind::kToken, 1);
  eos.token = Tok(2, -0.1f);
  eos.end_marker = true;  // the engine marks the token that ended the choice
  c.Apply({1, eos, Clock::now()}, &shown);
  EXPECT_FALSE(shown);  // end markers are not shown in logprobs
  for (int p = 0; p < 2; ++p) {
    for (int ch = 0; ch < 2; ++ch) {
      RequestEvent f = ev(RequestEvent::Kind::kFinished, ch);
      f.finish = FinishReason::kStop;
      f.completion_tokens = 2;
      f.cached_prompt_tokens = p == 1 ? 4 : 0;
      c.Apply({p, f, Clock::now()}, &shown);
    }
  }
  EXPECT_TRUE(c.done());
  EXPECT_EQ(c.choices()[3].text, "x");
  EXPECT_EQ(c.choices()[3].tokens.size(), 1u);
  const UsageCounts u = c.usage();
  EXPECT_EQ(u.prompt_tokens, 12);
  EXPECT_EQ(u.completion_tokens, 8);
  EXPECT_EQ(u.cached_tokens, 4);
  EXPECT_GE(c.ttft(), 0.0);
  EXPECT_EQ(c.inter_token().size(), 1u);
}

TEST(Metrics, HistogramsAreCumulativeAndFamiliesTyped) {
  Metrics m;
  m.CountRequest("/v1/completions", 200);
  m.CountRequest("/v1/completions", 200);
  m.CountRequest("/v1/chat/completions", 400);
  m.ObserveTtft(0.003);
  m.ObserveTtft(0.2);
  m.ObserveTtft(100);
  ServerGauges g;
  g.model_id = "a\"b";
  const std::string text = m.Render(g, nullptr);
  EXPECT_NE(text.find("stet_http_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("stet_time_to_first_token_seconds_bucket{le=\"0.005\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("stet_time_to_first_token_seconds_bucket{le=\"0.25\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("stet_time_to_first_token_seconds_bucket{le=\"+Inf\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("stet_time_to_first_token_seconds_count 3\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE stet_kv_blocks_used gauge\n"), std::string::npos);
  EXPECT_NE(text.find("model=\"a\\\"b\""), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
}

std::unique_ptr<Tokenizer> StoriesTokenizer() {
  const std::string path = testing::SharedDir() + "/models/stories260K/stories260K.gguf";
  auto f = gguf::GgufFile::Open(path);
  if (!f.ok()) return nullptr;
  auto v = VocabFromGguf(**f);
  if (!v.ok()) return nullptr;
  auto t = Tokenizer::Create(std::move(*v));
  return t.ok() ? std::move(*t) : nullptr;
}

TEST(ChatPromptTest, FallbackIsChatMlWithOneBosAndAStopString) {
  STET_REQUIRE_FILE(testing::SharedDir() + "/models/stories260K/stories260K.gguf");
  auto tok = StoriesTokenizer();
  ASSERT_TRUE(tok);
  auto cp = ChatPrompt::Create("", *tok);
  ASSERT_TRUE(cp.ok()) << cp.status().ToString();
  EXPECT_TRUE(cp->is_fallback());
  EXPECT_EQ(cp->extra_stops(), std::vector<std::string>{"<|im_end|>"});
  Json msgs = Json::array({Json{{"role", "user"}, {"content", "Hi"}}});
  std::string text;
  auto ids = cp->Build(msgs, nullptr, &text);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(text, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  ASSERT_FALSE(ids->empty());
  EXPECT_EQ((*ids)[0], tok->bos());
  EXPECT_EQ(std::count(ids->begin(), ids->end(), tok->bos()), 1);

  // A template that writes BOS itself: tokenization does not add a second one.
  auto own = ChatPrompt::Create(
      "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}", *tok);
  ASSERT_TRUE(own.ok());
  auto ids2 = own->Build(msgs, nullptr, &text);
  ASSERT_TRUE(ids2.ok());
  EXPECT_EQ(std::count(ids2->begin(), ids2->end(), tok->bos()), 1);
  EXPECT_EQ((*ids2)[0], tok->bos());

  // raise_exception in a template is a 400, not a crash.
  auto strict = ChatPrompt::Create("{{ raise_exception('roles must alternate') }}", *tok);
  ASSERT_TRUE(strict.ok());
  auto bad = strict->Build(msgs, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().status, 400);
  EXPECT_NE(bad.error().message.find("roles must alternate"), std::string::npos);
}

}  // namespace
}  // namespace stet::server
