// The chat template budget at the server: a template that breaks a limit on
// the load check's small conversations is refused by ChatPrompt::Create (and
// so by Server::Attach, which `stet serve` turns into a refusal to start); one
// that breaks it only on a request's messages makes that request a quick 400
// template_limit_exceeded, after which the same worker serves others.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "server/openai/chat_prompt.h"
#include "server/server.h"
#include "support/stories_engine.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"

namespace stet::server {
namespace {

std::string Stories() { return testing::StoriesPath(); }

std::unique_ptr<Tokenizer> StoriesTokenizer() {
  auto f = gguf::GgufFile::Open(Stories());
  if (!f.ok()) return nullptr;
  auto v = VocabFromGguf(**f);
  if (!v.ok()) return nullptr;
  auto t = Tokenizer::Create(std::move(*v));
  return t.ok() ? std::move(*t) : nullptr;
}

using testing::StoriesEngine;

// 2^30 macro calls: never finishes without a budget.
const char kHostile[] =
    "{% macro m(n) %}{% if n > 0 %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(30) "
    "}}";

// Passes the load check (4 and 6 messages), then loops on longer conversations.
const char kHostileOnLongChats[] =
    "{% if messages|length > 6 %}{% for i in range(100000) %}{% set x = 'a' * 30000000 %}{% endfor "
    "%}{% endif %}"
    "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}assistant:";

Json Messages(int n) {
  Json m = Json::array();
  for (int i = 0; i < n; ++i)
    m.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", "hi " + std::to_string(i)}});
  return m;
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(ChatTemplateLimits, CreateRefusesATemplateThatBreaksTheBudget) {
  STET_REQUIRE_FILE(Stories());
  auto tok = StoriesTokenizer();
  ASSERT_TRUE(tok);
  auto start = std::chrono::steady_clock::now();
  auto cp = ChatPrompt::Create(kHostile, *tok);
  EXPECT_LT(SecondsSince(start), 5.0);
  ASSERT_FALSE(cp.ok());
  EXPECT_EQ(cp.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(cp.status().message().find("step budget (10000000 steps)"), std::string::npos)
      << cp.status().ToString();
  EXPECT_NE(cp.status().message().find("test conversation"), std::string::npos)
      << cp.status().ToString();

  // A template over max_source_bytes is refused before it is parsed.
  TemplateLimits small;
  small.max_source_bytes = 16;
  auto big = ChatPrompt::Create("{{ messages[0]['content'] }}", *tok, small);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("over its size limit (16 bytes)"), std::string::npos);

  // Templates that only reject the test conversations (raise_exception) are
  // not the load check's concern; the fallback and real ones pass.
  EXPECT_TRUE(ChatPrompt::Create("{{ raise_exception('no system role') }}", *tok).ok());
  EXPECT_TRUE(ChatPrompt::Create("", *tok).ok());
  EXPECT_TRUE(ChatPrompt::Create(kHostileOnLongChats, *tok).ok());
}

TEST(ChatTemplateLimits, BuildOverALimitIsAQuick400) {
  STET_REQUIRE_FILE(Stories());
  auto tok = StoriesTokenizer();
  ASSERT_TRUE(tok);
  auto cp = ChatPrompt::Create(kHostileOnLongChats, *tok);
  ASSERT_TRUE(cp.ok()) << cp.status().ToString();
  auto start = std::chrono::steady_clock::now();
  auto ids = cp->Build(Messages(8), nullptr);
  EXPECT_LT(SecondsSince(start), 5.0);
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.error().status, 400);
  EXPECT_EQ(ids.error().type, "invalid_request_error");
  EXPECT_EQ(ids.error().code, "template_limit_exceeded");
  EXPECT_EQ(ids.error().param, "messages");
  EXPECT_NE(ids.error().message.find("step budget (10000000 steps)"), std::string::npos)
      << ids.error().message;
  EXPECT_TRUE(cp->Build(Messages(3), nullptr).ok());

  // The limits given at Create apply to every Build.
  TemplateLimits tight;
  tight.max_output_bytes = 200;  // the load check's conversations render to ~120 bytes
  auto small =
      ChatPrompt::Create("{% for m in messages %}{{ m.content }}{% endfor %}", *tok, tight);
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  Json long_message = Json::array({Json{{"role", "user"}, {"content", std::string(300, 'x')}}});
  auto over = small->Build(long_message, nullptr);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "template_limit_exceeded");
  EXPECT_NE(over.error().message.find("limit 200 bytes"), std::string::npos)
      << over.error().message;
}

TEST(ChatTemplateLimits, ServerAnswers400AndKeepsServing) {
  STET_REQUIRE_FILE(Stories());
  ServerOptions o;
  o.port = 0;
  o.log_requests = false;
  o.http_threads = 2;
  auto srv = Server::Start(o);
  ASSERT_TRUE(srv.ok()) << srv.status().ToString();

  // Attach refuses a hostile template: nothing is served.
  ModelInfo bad;
  bad.names = ModelNames(Stories(), "");
  bad.chat_template = kHostile;
  auto engine = StoriesEngine();
  ASSERT_TRUE(engine);
  Status st = (*srv)->Attach(std::move(engine), bad);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  EXPECT_FALSE((*srv)->ready());

  ModelInfo info;
  info.names = ModelNames(Stories(), "");
  info.chat_template = kHostileOnLongChats;
  engine = StoriesEngine();
  ASSERT_TRUE(engine);
  ASSERT_TRUE((*srv)->Attach(std::move(engine), info).ok());
  httplib::Client cli("127.0.0.1", (*srv)->port());
  cli.set_read_timeout(30, 0);

  // Both workers take a hostile request; each is answered, and frees its worker.
  for (int round = 0; round < 2; ++round) {
    Json body = {{"model", "stories260K"}, {"messages", Messages(8)}, {"max_tokens", 2}};
    auto start = std::chrono::steady_clock::now();
    auto r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_LT(SecondsSince(start), 5.0);
    EXPECT_EQ(r->status, 400) << r->body;
    Json e = Json::parse(r->body)["error"];
    EXPECT_EQ(e["type"], "invalid_request_error");
    EXPECT_EQ(e["code"], "template_limit_exceeded");
    EXPECT_EQ(e["param"], "messages");
    EXPECT_NE(e["message"].get<std::string>().find("step budget"), std::string::npos) << r->body;
  }
  auto h = cli.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  Json ok = {
      {"model", "stories260K"}, {"messages", Messages(3)}, {"max_tokens", 2}, {"temperature", 0}};
  auto r = cli.Post("/v1/chat/completions", ok.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  (*srv)->Shutdown();
  (*srv)->Wait();
}

}  // namespace
}  // namespace stet::server
