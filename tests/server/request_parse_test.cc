// Request-body validation without a network or a model: every malformed field
// becomes a 400 naming the field (404 for an unknown model) — whether the
// parser refuses it (types, the API's own policy) or the engine's
// ValidateRequest does (ranges, vocabulary, context) — valid bodies become the
// engine parameters the OpenAI API describes, and UTF-8 checks are strict
// (overlongs, surrogates, truncations rejected).
#include "server/openai/request_parse.h"

#include <gtest/gtest.h>

#include <ctime>

#include "http/json_fields.h"

namespace stet::server {
namespace {

const ServedModel kModel{"SmolLM2", "SmolLM2.Q4_1.gguf", "SmolLM2.Q4_1"};

const RequestLimits kLimits{100, 32, {}};

// Parse, then BuildParams for each prompt (a text prompt stands for the ids
// {1}): the handlers' whole path from body to engine parameters, less the model.
ApiOr<GenerationRequest> Completion(const std::string& body) {
  auto j = ParseBody(body);
  if (!j.ok()) return j.error();
  auto r = ParseCompletionRequest(*j, kModel);
  if (!r.ok()) return r;
  for (const PromptInput& in : r->prompts) {
    auto p =
        BuildParams(r->s, in.is_text ? std::vector<int32_t>{1} : in.ids, kLimits, 16, "prompt");
    if (!p.ok()) return p.error();
  }
  return r;
}

ApiOr<GenerationRequest> Chat(const std::string& body) {
  auto j = ParseBody(body);
  if (!j.ok()) return j.error();
  auto r = ParseChatRequest(*j, kModel);
  if (!r.ok()) return r;
  auto p = BuildParams(r->s, {1}, kLimits, std::nullopt, "messages");
  if (!p.ok()) return p.error();
  return r;
}

TEST(Utf8, AcceptsWellFormedAndRejectsEveryIllFormedKind) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));                            // U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));                                   // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));                               // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));                               // surrogate D800
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));                           // > U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));                                   // truncated
  EXPECT_FALSE(IsValidUtf8("\x80"));                                       // lone continuation
  EXPECT_FALSE(IsValidUtf8("\xFF"));
}

TEST(Utf8, SanitizeReplacesMaximalSubparts) {
  EXPECT_EQ(SanitizeUtf8("a\xE2\x82"
                         "b"),
            "a\xEF\xBF\xBD"
            "b");  // one U+FFFD for the truncated €
  EXPECT_EQ(SanitizeUtf8("\xFF\xFE"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(SanitizeUtf8("ok \xC3\xA9"), "ok \xC3\xA9");
}

TEST(ParseBody, RejectsNonObjectsBadJsonBadUtf8AndDeepNesting) {
  EXPECT_FALSE(ParseBody("").ok());
  EXPECT_FALSE(ParseBody("{").ok());
  EXPECT_FALSE(ParseBody("[1,2]").ok());
  EXPECT_FALSE(ParseBody("\"str\"").ok());
  EXPECT_FALSE(ParseBody("{\"a\": \"\xC3\x28\"}").ok());
  EXPECT_EQ(ParseBody("{\"a\": \"\xC3\x28\"}").error().message,
            "The request body is not valid UTF-8.");
  std::string deep = "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_FALSE(ParseBody(deep).ok());
  // Brackets inside strings do not count as nesting.
  EXPECT_TRUE(ParseBody("{\"a\": \"" + std::string(200, '[') + "\"}").ok());
  EXPECT_TRUE(ParseBody("{\"a\": 1}").ok());
}

// Issue 12: an ignored field holding an object of 100k keys (1.3 MB) cost
// 29 s with nlohmann's ordered_json builder (a linear search per key).
TEST(ParseBody, IsLinearInAnObjectsKeys) {
  std::string body = R"({"model": "SmolLM2", "prompt": "x", "ignored": {)";
  for (int i = 0; i < 100000; ++i) body += (i ? "," : "") + ("\"key" + std::to_string(i) + "\":1");
  body += "}}";
  ASSERT_GT(body.size(), 1200000u);
  // CPU time, not wall time: the bound must hold on a loaded machine too (it took 29 s).
  const std::clock_t t0 = std::clock();
  auto j = ParseBody(body);
  const double secs = static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["ignored"].size(), 100000u);
  EXPECT_LT(secs, 0.5) << "100k keys took " << secs << " s of CPU";
  EXPECT_TRUE(ParseCompletionRequest(*j, kModel).ok());
}

TEST(ParseBody, RepeatedKeysKeepTheLastValueInTheFirstPlace) {
  auto j = ParseBody(R"({"a": 1, "b": {"x": 1, "x": [2]}, "a": {"c": null}, "d": -0.5})");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(Dump(*j), R"({"a":{"c":null},"b":{"x":[2]},"d":-0.5})");
  // Numbers keep their kinds; an integer past uint64 reads as a float; overflow is refused.
  auto n = ParseBody(R"({"u": 18446744073709551615, "i": -9223372036854775808, "f": 1e300,
                         "g": 18446744073709551616})");
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE((*n)["u"].is_number_unsigned());
  EXPECT_TRUE((*n)["i"].is_number_integer());
  EXPECT_TRUE((*n)["f"].is_number_float());
  EXPECT_TRUE((*n)["g"].is_number_float());
  EXPECT_FALSE(ParseBody(R"({"f": 1e400})").ok());
  EXPECT_FALSE(ParseBody(R"({"a": 1} x)").ok());
  EXPECT_FALSE(ParseBody(R"({"a": 1,})").ok());
}

TEST(ParseCompletion, StopLogitBiasAndCacheSaltAreBounded) {
  const std::string head = R"({"model": "SmolLM2", "prompt": "x", )";
  const std::string ok_stop(kMaxStopBytes, 's'), long_stop(kMaxStopBytes + 1, 's');
  EXPECT_TRUE(Completion(head + R"("stop": ")" + ok_stop + "\"}").ok());
  for (const std::string& field :
       {R"("stop": ")" + long_stop + "\"", R"("stop": ["a", ")" + long_stop + "\"]"}) {
    auto r = Completion(head + field + "}");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().param, "stop");
    EXPECT_NE(r.error().message.find("4096 bytes"), std::string::npos) << r.error().message;
  }
  std::string bias = R"("logit_bias": {)";
  for (int i = 0; i <= kMaxLogitBias; ++i)
    bias += (i ? "," : "") + ("\"" + std::to_string(i) + "\":1");
  auto r = Completion(head + bias + "}}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().param, "logit_bias");
  EXPECT_NE(r.error().message.find("at most 1024"), std::string::npos) << r.error().message;
  auto salt =
      Completion(head + R"("cache_salt": ")" + std::string(kMaxCacheSaltBytes + 1, 'x') + "\"}");
  ASSERT_FALSE(salt.ok());
  EXPECT_EQ(salt.error().param, "cache_salt");
  auto good = Completion(head + R"("cache_salt": "tenant-7"})");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good->s.cache_salt, "tenant-7");
  EXPECT_EQ(Completion(head + R"("cache_salt": 7})").error().param, "cache_salt");
}

TEST(ParseCompletion, DefaultsAndAllFields) {
  auto r = Completion(R"({"model": "SmolLM2", "prompt": "hi"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompts.size(), 1u);
  EXPECT_TRUE(r->prompts[0].is_text);
  EXPECT_FALSE(r->s.max_tokens.has_value());
  EXPECT_EQ(r->s.params.n, 1);
  EXPECT_FLOAT_EQ(r->s.params.sampling.temperature, 1.0f);
  EXPECT_FALSE(r->s.params.sampling.seed.has_value());
  EXPECT_EQ(r->s.params.top_logprobs, 0);

  r = Completion(R"({"model": "SmolLM2.Q4_1.gguf", "prompt": ["a", "b"], "max_tokens": 7, "n": 3,
      "temperature": 0.5, "top_p": 0.9, "stop": ["x", "y"], "seed": 42, "logprobs": 5, "echo": true,
      "presence_penalty": 1.5, "frequency_penalty": -0.5, "logit_bias": {"11": -100, "7": 2.5},
      "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1, "ignore_eos": true, "user": "u",
      "stream": true, "stream_options": {"include_usage": true}, "unknown_field": {"ignored": 1}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompts.size(), 2u);
  EXPECT_EQ(*r->s.max_tokens, 7);
  const RequestParams& p = r->s.params;
  EXPECT_EQ(p.n, 3);
  EXPECT_EQ(p.stop, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(*p.sampling.seed, 42u);
  EXPECT_EQ(*r->out.logprobs, 5);
  EXPECT_EQ(p.top_logprobs, 5);
  EXPECT_TRUE(r->out.echo);
  EXPECT_TRUE(p.prompt_logprobs);  // echo with logprobs scores the prompt
  EXPECT_EQ(p.sampling.logit_bias.size(), 2u);
  EXPECT_FLOAT_EQ(p.sampling.logit_bias.at(11), -100.0f);
  EXPECT_EQ(p.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(p.sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.sampling.repetition_penalty, 1.1f);
  EXPECT_FLOAT_EQ(p.sampling.presence_penalty, 1.5f);
  EXPECT_FLOAT_EQ(p.sampling.frequency_penalty, -0.5f);
  EXPECT_TRUE(p.ignore_eos);
  EXPECT_TRUE(r->s.stream);
  EXPECT_TRUE(r->s.include_usage);
}

TEST(ParseCompletion, PromptShapes) {
  auto r = Completion(R"({"model": "SmolLM2", "prompt": [1, 2, 3]})");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->prompts.size(), 1u);
  EXPECT_FALSE(r->prompts[0].is_text);
  EXPECT_EQ(r->prompts[0].ids, (std::vector<int32_t>{1, 2, 3}));
  r = Completion(R"({"model": "SmolLM2", "prompt": [[1, 2], [3]]})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompts.size(), 2u);
  EXPECT_FALSE(Completion(R"({"model": "SmolLM2", "prompt": []})").ok());
  EXPECT_FALSE(Completion(R"({"model": "SmolLM2", "prompt": [[]]})").ok());
  EXPECT_FALSE(Completion(R"({"model": "SmolLM2", "prompt": [1, "a"]})").ok());
  EXPECT_FALSE(Completion(R"({"model": "SmolLM2", "prompt": [-1]})").ok());
  EXPECT_FALSE(Completion(R"({"model": "SmolLM2", "prompt": [1.5]})").ok());
  EXPECT_FALSE(Completion(R"({"model": "SmolLM2", "prompt": {"a": 1}})").ok());
  EXPECT_FALSE(Completion(R"({"model": "SmolLM2"})").ok());
}

TEST(ParseCompletion, SeedWrapsNegativeAndAcceptsFullUint64) {
  auto r = Completion(R"({"model": "SmolLM2", "prompt": "x", "seed": -1})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r->s.params.sampling.seed, ~uint64_t{0});
  r = Completion(R"({"model": "SmolLM2", "prompt": "x", "seed": 18446744073709551615})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r->s.params.sampling.seed, ~uint64_t{0});
  EXPECT_FALSE(Completion(R"({"model": "SmolLM2", "prompt": "x", "seed": "7"})").ok());
  EXPECT_FALSE(Completion(R"({"model": "SmolLM2", "prompt": "x", "seed": 1.5})").ok());
}

struct BadCase {
  const char* body;
  const char* param;  // expected "param" of the error
  int status;
};

class BadCompletion : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadCompletion, IsRejectedNamingTheField) {
  auto r = Completion(GetParam().body);
  ASSERT_FALSE(r.ok()) << GetParam().body;
  EXPECT_EQ(r.error().status, GetParam().status);
  EXPECT_EQ(r.error().param, GetParam().param) << r.error().message;
  EXPECT_FALSE(r.error().message.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Fields, BadCompletion,
    ::testing::Values(
        BadCase{R"({"prompt": "x"})", "model", 400},
        BadCase{R"({"model": 5, "prompt": "x"})", "model", 400},
        BadCase{R"({"model": "gpt-4", "prompt": "x"})", "model", 404},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "n": 0})", "n", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "n": 129})", "n", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "n": "2"})", "n", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "max_tokens": -1})", "max_tokens", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "max_tokens": 1e300})", "max_tokens", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "max_tokens": 99999999999})", "max_tokens",
                400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "max_tokens": 1.5})", "max_tokens", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "temperature": 2.5})", "temperature", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "temperature": -0.1})", "temperature", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "temperature": "hot"})", "temperature", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "top_p": 1.5})", "top_p", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "presence_penalty": 3})", "presence_penalty",
                400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "frequency_penalty": -2.5})",
                "frequency_penalty", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "logprobs": 6})", "logprobs", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "logprobs": true})", "logprobs", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "stop": ["a","b","c","d","e"]})", "stop",
                400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "stop": 5})", "stop", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "stop": [5]})", "stop", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "logit_bias": {"abc": 1}})", "logit_bias",
                400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "logit_bias": {"5": 101}})", "logit_bias",
                400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "logit_bias": {"-5": 1}})", "logit_bias",
                400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "logit_bias": [1]})", "logit_bias", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "echo": "yes"})", "echo", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "stream": 1})", "stream", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "stream_options": {"include_usage": true}})",
                "stream_options", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "best_of": 3})", "best_of", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "suffix": "end"})", "suffix", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "top_k": -2})", "top_k", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "min_p": 1.5})", "min_p", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "repetition_penalty": 0})",
                "repetition_penalty", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "n": 128, "prompt": ["a","b","c"]})", "n",
                400},
        // Refused by the engine's ValidateRequest (vocabulary, context, ranges), mapped to `param`.
        BadCase{R"({"model": "SmolLM2", "prompt": [1, 100]})", "prompt", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": [[1], [-3]]})", "prompt", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": [[1], []]})", "prompt", 400},
        BadCase{
            R"({"model": "SmolLM2", "prompt": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32]})",
            "prompt", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "logit_bias": {"100": 1}})", "logit_bias",
                400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "repetition_penalty": 11})",
                "repetition_penalty", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "min_p": 1e300})", "min_p", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "top_p": -0.5})", "top_p", 400},
        BadCase{R"({"model": "SmolLM2", "prompt": "x", "n": -3})", "n", 400}));

class BadChat : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadChat, IsRejectedNamingTheField) {
  auto r = Chat(GetParam().body);
  ASSERT_FALSE(r.ok()) << GetParam().body;
  EXPECT_EQ(r.error().status, GetParam().status);
  EXPECT_EQ(r.error().param, GetParam().param) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Fields, BadChat,
    ::testing::Values(
        BadCase{R"({"model": "SmolLM2"})", "messages", 400},
        BadCase{R"({"model": "SmolLM2", "messages": []})", "messages", 400},
        BadCase{R"({"model": "SmolLM2", "messages": "hi"})", "messages", 400},
        BadCase{R"({"model": "SmolLM2", "messages": [5]})", "messages[0]", 400},
        BadCase{R"({"model": "SmolLM2", "messages": [{"content": "x"}]})", "messages[0].role", 400},
        BadCase{R"({"model": "SmolLM2", "messages": [{"role": "wizard", "content": "x"}]})",
                "messages[0].role", 400},
        BadCase{R"({"model": "SmolLM2", "messages": [{"role": "user"}]})", "messages[0].content",
                400},
        BadCase{R"({"model": "SmolLM2", "messages": [{"role": "user", "content": 5}]})",
                "messages[0].content", 400},
        BadCase{
            R"({"model": "SmolLM2", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
            "messages[0].content[0].type", 400},
        BadCase{
            R"({"model": "SmolLM2", "messages": [{"role": "user", "content": [{"type": "text"}]}]})",
            "messages[0].content[0].text", 400},
        BadCase{
            R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x", "tool_calls": []}]})",
            "messages[0].tool_calls", 400},
        BadCase{
            R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}], "top_logprobs": 21,
                   "logprobs": true})",
            "top_logprobs", 400},
        BadCase{
            R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})",
            "top_logprobs", 400},
        BadCase{
            R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}], "top_logprobs": -1,
                   "logprobs": true})",
            "top_logprobs", 400},
        BadCase{R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}], "n": 129})",
                "n", 400},
        BadCase{
            R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}], "temperature": 2.5})",
            "temperature", 400},
        BadCase{
            R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}], "logprobs": 1})",
            "logprobs", 400},
        BadCase{
            R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}], "max_tokens": 0})",
            "max_tokens", 400},
        BadCase{
            R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}], "tools": {}})",
            "tools", 400},
        BadCase{
            R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})",
            "tool_choice", 400},
        BadCase{R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}],
                   "response_format": {"type": "xml"}})",
                "response_format.type", 400},
        BadCase{R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}],
                   "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "string", "pattern": "(?=a)b"}}}})",
                "response_format.json_schema.schema", 400},
        BadCase{R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}],
                   "grammar": "root ::= \"a"})",
                "grammar", 400},
        BadCase{R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}],
                   "tools": [{"type": "function", "function": {"name": "f"}}],
                   "tool_choice": {"type": "function"}})",
                "tool_choice", 400},
        BadCase{R"({"model": "nope", "messages": [{"role": "user", "content": "x"}]})", "model",
                404}));

TEST(ParseChat, StructuredOutputsAndForcedToolCalls) {
  const std::string head =
      R"({"model": "SmolLM2", "messages": [{"role": "user", "content": "x"}], )";
  auto plain = Chat(head + R"("response_format": {"type": "text"}})");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->s.params.grammar);
  auto obj = Chat(head + R"("response_format": {"type": "json_object"}})");
  ASSERT_TRUE(obj.ok()) << obj.error().message;
  EXPECT_TRUE(obj->s.params.grammar);
  auto schema = Chat(head + R"("response_format": {"type": "json_schema", "json_schema":
      {"name": "n", "strict": true, "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}}})");
  ASSERT_TRUE(schema.ok()) << schema.error().message;
  EXPECT_TRUE(schema->s.params.grammar);
  auto gbnf = Chat(head + R"("grammar": "root ::= [a-z]+"})");
  ASSERT_TRUE(gbnf.ok()) << gbnf.error().message;
  EXPECT_TRUE(gbnf->s.params.grammar);
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f"}}], )";
  auto required =
      Chat(head + tools + R"("tool_choice": "required", "parallel_tool_calls": false})");
  ASSERT_TRUE(required.ok()) << required.error().message;
  EXPECT_EQ(required->tools.forced, "*");
  EXPECT_FALSE(required->tools.parallel);
  auto named =
      Chat(head + tools + R"("tool_choice": {"type": "function", "function": {"name": "f"}}})");
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(named->tools.forced, "f");
  EXPECT_TRUE(named->tools.parse);
}

TEST(ParseChat, NormalizesMessagesForTheTemplate) {
  auto r = Chat(R"({"model": "SmolLM2", "messages": [
      {"role": "developer", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "name": "ann"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "f", "arguments": "{}"}}]},
      {"role": "tool", "content": "42", "tool_call_id": "c1"}],
      "max_completion_tokens": 9, "max_tokens": 3, "logprobs": true, "top_logprobs": 20,
      "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "auto"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Json& m = r->messages;
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[1]["content"], "a\nb");
  EXPECT_EQ(m[1]["name"], "ann");
  EXPECT_EQ(m[2]["content"], "");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(m[3]["tool_call_id"], "c1");
  EXPECT_EQ(*r->s.max_tokens, 9);  // max_completion_tokens wins
  EXPECT_EQ(r->out.logprobs, 20);  // logprobs: true, and 20 alternatives per token
  EXPECT_EQ(r->s.params.top_logprobs, 20);
  EXPECT_TRUE(r->tools.tools.is_array());
}

TEST(BuildParams, ValidatesThroughTheEngineAndClampsMaxTokens) {
  CommonFields s;
  s.max_tokens = 1000;
  s.params.sampling.temperature = 0.7f;
  s.params.sampling.seed = 5;
  auto p = BuildParams(s, {1, 2, 3}, kLimits, 16, "prompt");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->max_tokens, 29);  // clamped to the room left in the context
  EXPECT_EQ(p->prompt, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(*p->sampling.seed, 5u);
  EXPECT_FLOAT_EQ(p->sampling.temperature, 0.7f);

  auto too_long = BuildParams(s, std::vector<int32_t>(32, 1), kLimits, 16, "messages");
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().code, "context_length_exceeded");
  EXPECT_EQ(too_long.error().param, "messages");
  EXPECT_EQ(too_long.error().status, 400);

  auto oov = BuildParams(s, {1, 100}, kLimits, 16, "prompt");
  ASSERT_FALSE(oov.ok());
  EXPECT_EQ(oov.error().param, "prompt");
  EXPECT_TRUE(oov.error().code.empty());

  s.params.sampling.logit_bias[100] = 1.0f;
  auto bias = BuildParams(s, {1}, kLimits, 16, "prompt");
  ASSERT_FALSE(bias.ok());
  EXPECT_EQ(bias.error().param, "logit_bias");

  EXPECT_FALSE(BuildParams(CommonFields{}, {}, kLimits, 16, "prompt").ok());
  auto def = BuildParams(CommonFields{}, {1}, kLimits, 16, "prompt");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->max_tokens, 16);
}

TEST(ParseSampling, TopPZeroMeansGreedy) {
  auto r = Completion(R"({"model": "SmolLM2", "prompt": "x", "top_p": 0, "temperature": 1})");
  ASSERT_TRUE(r.ok());
  EXPECT_FLOAT_EQ(r->s.params.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r->s.params.sampling.top_p, 1.0f);
  r = Completion(R"({"model": "SmolLM2", "prompt": "x", "top_k": -1})");  // vLLM's "off"
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->s.params.sampling.top_k, 0);
}

TEST(ApiErrorJson, HasOpenAiShape) {
  ApiError e = BadRequest("bad n", "n", "");
  Json j = ErrorJson(e);
  EXPECT_EQ(j["error"]["message"], "bad n");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "n");
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_EQ(ModelNotFound("x").code, "model_not_found");
  // Never throws on invalid UTF-8.
  e.message = "bad \xFF byte";
  EXPECT_NE(ErrorBody(e).find("\xEF\xBF\xBD"), std::string::npos);
}

}  // namespace
}  // namespace stet::server
