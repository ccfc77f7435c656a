// The server's lifecycle in process: it answers before the model is attached
// (/health 503 "loading", generation 503 model_loading, /metrics open), serves
// once an engine is attached, and Shutdown stops the listener. Uses
// stories260K and cpp-httplib's client on a free loopback port.
#include "server/server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "support/stories_engine.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"

namespace stet::server {
namespace {

std::string Stories() { return testing::StoriesPath(); }

using testing::StoriesEngine;

TEST(ServerLifecycle, LoadingThenReadyThenShutdown) {
  STET_REQUIRE_FILE(Stories());
  ServerOptions o;
  o.port = 0;
  o.log_requests = false;
  auto srv = Server::Start(o);
  ASSERT_TRUE(srv.ok()) << srv.status().ToString();
  const int port = (*srv)->port();
  ASSERT_GT(port, 0);
  httplib::Client cli("127.0.0.1", port);

  auto h = cli.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 503);
  EXPECT_EQ(nlohmann::json::parse(h->body)["status"], "loading");
  EXPECT_EQ(h->get_header_value("Retry-After"), "1");
  auto c = cli.Post("/v1/completions", R"({"model": "x", "prompt": "hi"})", "application/json");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 503);
  EXPECT_EQ(nlohmann::json::parse(c->body)["error"]["code"], "model_loading");
  auto m = cli.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("stet_ready 0\n"), std::string::npos);

  auto engine = StoriesEngine();
  ASSERT_TRUE(engine);
  ModelInfo info;
  info.names = ModelNames(Stories(), "llama");
  EXPECT_EQ(info.names.file_stem, "stories260K");
  ASSERT_TRUE((*srv)->Attach(std::move(engine), info).ok());
  EXPECT_TRUE((*srv)->ready());

  h = cli.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  c = cli.Post(
      "/v1/completions",
      R"({"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 5, "temperature": 0})",
      "application/json");
  ASSERT_TRUE(c);
  ASSERT_EQ(c->status, 200) << c->body;
  auto j = nlohmann::json::parse(c->body);
  EXPECT_EQ(j["model"], "llama");
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_FALSE(c->get_header_value("X-Request-Id").empty());

  (*srv)->Shutdown();
  (*srv)->Wait();
  httplib::Client after("127.0.0.1", port);
  after.set_connection_timeout(1, 0);
  EXPECT_FALSE(after.Get("/health"));  // the listener is gone
}

TEST(ServerLifecycle, ModelNames) {
  ServedModel m = ModelNames("/a/b/SmolLM2-135M-Instruct.Q4_1.gguf", "");
  EXPECT_EQ(m.id, "SmolLM2-135M-Instruct.Q4_1");
  EXPECT_EQ(m.file_name, "SmolLM2-135M-Instruct.Q4_1.gguf");
  EXPECT_TRUE(m.Matches("SmolLM2-135M-Instruct.Q4_1.gguf"));
  EXPECT_FALSE(m.Matches("SmolLM2"));
  m = ModelNames("model.gguf", "Named Model");
  EXPECT_EQ(m.id, "Named Model");
  EXPECT_TRUE(m.Matches("model"));
}

TEST(ServerLifecycle, BadOptionsAndBusyPort) {
  ServerOptions o;
  o.max_queue = 0;
  EXPECT_FALSE(Server::Start(o).ok());
  ServerOptions a;
  a.port = 0;
  a.log_requests = false;
  auto first = Server::Start(a);
  ASSERT_TRUE(first.ok());
  ServerOptions b;
  b.port = (*first)->port();
  auto second = Server::Start(b);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("cannot listen"), std::string::npos);
}

}  // namespace
}  // namespace stet::server
