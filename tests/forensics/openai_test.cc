// Response parsing for both endpoint shapes, whole and streamed, with the
// variations real servers send. The completions and chat bodies below are
// trimmed from llama-cpp-python 0.3.36's server (SmolLM2-135M-Instruct Q4_1).
#include "forensics/client/openai.h"

#include <gtest/gtest.h>

#include "forensics/client/http_client.h"

namespace stet::forensics {
namespace {

const char kCompletion[] = R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"x",
 "choices":[{"text":" Paris.","index":0,"logprobs":{"text_offset":[24,30],
 "token_logprobs":[-0.264419287443161,-0.38691410422325134],"tokens":[" Paris","."],
 "top_logprobs":[{" Paris":-0.264419287443161," the":-2.8043324947357178," London":-4.400745868682861},
 {".":-0.38691410422325134,",":-1.5976799726486206," and":-2.9964072704315186}]},"finish_reason":"length"}],
 "usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}})";

const char kChat[] = R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"x",
 "system_fingerprint":"fp_abc",
 "choices":[{"index":0,"message":{"content":"I'm","role":"assistant"},
 "logprobs":{"content":[{"token":"I","logprob":-2.3581528663635254,"bytes":null,
 "top_logprobs":[{"token":"I","logprob":-2.3581528663635254,"bytes":null},
 {"token":"Hello","logprob":-2.3805184364318848,"bytes":null}]},
 {"token":"'m","logprob":-0.15956048667430878,"bytes":null,"top_logprobs":[]}],"refusal":null},
 "finish_reason":"length"}]})";

TEST(OpenAi, ParsesCompletionsShape) {
  auto c = ParseCompletion(kCompletion);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->text, " Paris.");
  ASSERT_TRUE(c->has_logprobs);
  ASSERT_EQ(c->tokens.size(), 2u);
  EXPECT_EQ(c->tokens[0].token, " Paris");
  EXPECT_DOUBLE_EQ(c->tokens[0].logprob, -0.264419287443161);
  ASSERT_EQ(c->tokens[0].top.size(), 3u);
  EXPECT_EQ(c->tokens[0].top[0].first, " Paris");  // sorted by logprob, not by key
  EXPECT_EQ(c->tokens[0].top[2].first, " London");
  EXPECT_EQ(c->finish_reason, "length");
  EXPECT_TRUE(c->system_fingerprint.empty());
}

TEST(OpenAi, ParsesChatShape) {
  auto c = ParseCompletion(kChat);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->text, "I'm");
  EXPECT_EQ(c->system_fingerprint, "fp_abc");
  ASSERT_EQ(c->tokens.size(), 2u);
  EXPECT_EQ(c->tokens[0].top[1].first, "Hello");
  EXPECT_TRUE(c->tokens[1].top.empty());
}

TEST(OpenAi, NoLogprobsAndNonFiniteValues) {
  auto c = ParseCompletion(R"({"choices":[{"text":"hi","logprobs":null}]})");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->has_logprobs);
  // Python's json writes -Infinity, which strict JSON refuses.
  auto d = ParseCompletion(
      R"({"choices":[{"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[-Infinity],"top_logprobs":[null]}}]})");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_LT(d->tokens[0].logprob, -1e299);
}

TEST(OpenAi, ErrorsAreStatuses) {
  EXPECT_FALSE(ParseCompletion("not json").ok());
  EXPECT_FALSE(ParseCompletion(R"({"choices":[]})").ok());
  auto e = ParseCompletion(R"({"error":{"message":"model not found"}})");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("model not found"), std::string::npos);
  // Wrong member types are read as absent, never thrown.
  auto w = ParseCompletion(R"({"choices":[{"text":1,"index":"zero","logprobs":{"tokens":"x"}}]})");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->text, "");
  EXPECT_FALSE(w->has_logprobs);
}

TEST(OpenAi, StreamChunksAccumulate) {
  Completion acc;
  ASSERT_TRUE(
      AppendStreamChunk(R"({"choices":[{"index":0,"delta":{"role":"assistant"}}]})", &acc).ok());
  ASSERT_TRUE(AppendStreamChunk(
                  R"({"system_fingerprint":"fp1","choices":[{"index":0,"delta":{"content":"Hel"},
    "logprobs":{"content":[{"token":"Hel","logprob":-0.5,"top_logprobs":[{"token":"Hel","logprob":-0.5}]}]}}]})",
                  &acc)
                  .ok());
  ASSERT_TRUE(
      AppendStreamChunk(R"({"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop",
    "logprobs":{"content":[{"token":"lo","logprob":-0.1,"top_logprobs":[]}]}}]})",
                        &acc)
          .ok());
  ASSERT_TRUE(AppendStreamChunk(R"({"choices":[],"usage":{"total_tokens":3}})", &acc).ok());
  EXPECT_EQ(acc.text, "Hello");
  EXPECT_EQ(acc.system_fingerprint, "fp1");
  EXPECT_EQ(acc.finish_reason, "stop");
  ASSERT_EQ(acc.tokens.size(), 2u);
  EXPECT_EQ(acc.tokens[1].token, "lo");
  Completion legacy;
  ASSERT_TRUE(
      AppendStreamChunk(
          R"({"choices":[{"index":0,"text":" Par","logprobs":{"tokens":[" Par"],"token_logprobs":[-0.2],"top_logprobs":[{" Par":-0.2}]}}]})",
          &legacy)
          .ok());
  ASSERT_TRUE(
      AppendStreamChunk(
          R"({"choices":[{"index":0,"text":"is","logprobs":{"tokens":["is"],"token_logprobs":[-0.1],"top_logprobs":[{"is":-0.1}]}}]})",
          &legacy)
          .ok());
  EXPECT_EQ(legacy.text, " Paris");
  EXPECT_EQ(legacy.tokens.size(), 2u);
  EXPECT_FALSE(
      AppendStreamChunk(R"({"choices":[{"index":"0"}]})", &legacy).ok());  // wrong type: a Status
}

TEST(OpenAi, RequestBodies) {
  CompletionRequest r;
  r.model = "m";
  r.prompt = "hi";
  r.seed = 3;
  r.top_logprobs = 5;
  auto j = r.ToJson();
  EXPECT_EQ(j["prompt"], "hi");
  EXPECT_EQ(j["logprobs"], 5);
  EXPECT_EQ(j["seed"], 3);
  EXPECT_FALSE(j.contains("stream"));
  EXPECT_EQ(r.Path(), "completions");
  CompletionRequest c;
  c.model = "m";
  c.messages = nlohmann::json::array({{{"role", "user"}, {"content", "x"}}});
  c.top_logprobs = 2;
  c.stream = true;
  auto k = c.ToJson();
  EXPECT_EQ(k["logprobs"], true);
  EXPECT_EQ(k["top_logprobs"], 2);
  EXPECT_EQ(k["stream"], true);
  EXPECT_FALSE(k.contains("seed"));
  EXPECT_EQ(c.Path(), "chat/completions");
}

TEST(OpenAi, EndpointUrls) {
  EXPECT_EQ(EndpointUrl("http://127.0.0.1:8081", "completions"),
            "http://127.0.0.1:8081/v1/completions");
  EXPECT_EQ(EndpointUrl("http://127.0.0.1:8081/", "completions"),
            "http://127.0.0.1:8081/v1/completions");
  EXPECT_EQ(EndpointUrl("http://127.0.0.1:8081/v1/", "/chat/completions"),
            "http://127.0.0.1:8081/v1/chat/completions");
}

TEST(OpenAi, RefusedConnectionIsAnIoError) {
  // Port 9 (discard) on loopback: nothing listens there in a test environment.
  HttpOptions o;
  o.connect_timeout_ms = 2000;
  o.timeout_ms = 4000;
  HttpClient client(o);
  auto r = client.Get("http://127.0.0.1:9/v1/models");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  HttpResponse resp;
  resp.status = 401;
  resp.body = "{\"error\":\"bad key\"}";
  EXPECT_NE(HttpStatusError("u", resp).message().find("--api-key"), std::string::npos);
}

}  // namespace
}  // namespace stet::forensics
