// The server's writers read back by the wire module (src/wire), the one
// reader the forensics tools use: for each wire shape, engine events are
// folded once by the collector and written by the shape's WireFormat, and the
// stream, parsed as SSE and folded by wire::StreamFold, equals the
// non-streamed body read by wire::ReadAnswer — texts, tool calls, logprobs and
// finish reasons — with tool parsing on and off.
#include "server/openai/wire_format.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "server/job.h"
#include "server/structured/tool_formats.h"
#include "wire/answer.h"
#include "wire/stream_fold.h"

namespace stet::server {
namespace {

// The fake vocabulary: ids 20 and up stand for the pieces Events() gives them.
std::map<int32_t, std::string>& Pieces() {
  static auto* m = new std::map<int32_t, std::string>();
  return *m;
}

std::string Piece(int32_t id) {
  if (id == 9) return "\xE2\x82";
  auto it = Pieces().find(id);
  return it != Pieces().end() ? it->second : "t" + std::to_string(id);
}

const Json& Tools() {
  static const Json* t = new Json(Json::parse(
      R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])"));
  return *t;
}

RequestEvent TokenEvent(int choice, int32_t id, const std::string& text, bool end = false) {
  RequestEvent ev;
  ev.kind = RequestEvent::Kind::kToken;
  ev.choice = choice;
  ev.token.id = id;
  ev.token.logprob = -0.25f * static_cast<float>(id % 4 + 1);
  ev.token.top = {{id, ev.token.logprob}, {id + 1, -3.0f}};
  ev.token.text = Piece(id);
  ev.text_delta = text;
  ev.end_marker = end;
  return ev;
}

RequestEvent FinishEvent(int choice, FinishReason why) {
  RequestEvent ev;
  ev.kind = RequestEvent::Kind::kFinished;
  ev.choice = choice;
  ev.finish = why;
  ev.completion_tokens = 3;
  return ev;
}

// Choice 0 answers text (a partial UTF-8 character included); choice 1 the
// pieces of `second` (a tool call, or text).
std::vector<Job::Item> Events(const std::vector<std::string>& second) {
  std::vector<Job::Item> items;
  const auto add = [&](RequestEvent ev) { items.push_back({0, std::move(ev), Clock::now()}); };
  add(TokenEvent(0, 3, "t3"));
  for (size_t i = 0; i < second.size(); ++i) {
    const int32_t id = static_cast<int32_t>(20 + i);
    Pieces()[id] = second[i];
    add(TokenEvent(1, id, second[i]));
  }
  add(TokenEvent(0, 9, ""));
  add(TokenEvent(0, 4, "\xE2\x82\xAC"));
  add(TokenEvent(0, 2, "", /*end=*/true));
  add(FinishEvent(0, FinishReason::kStop));
  add(FinishEvent(1, FinishReason::kLength));
  return items;
}

struct Written {
  std::string stream;
  Json body;
};

Written Write(const GenerationRequest& g, const std::vector<Job::Item>& items, bool tools) {
  PreparedPrompts p;
  p.params.resize(1);
  p.params[0].n = g.s.params.n;
  ResponseMeta meta{"id-1", 7, "m", "fp_x", 5};
  ToolParseFn parse;
  if (tools) {
    parse = [](int index, const ChoiceResult& c) {
      return ParseToolCalls(HermesToolFormat(), c.raw, c.text, Tools(), 5, index);
    };
  }
  auto f = MakeWireFormat(g, p, meta, Piece, parse);
  Collector coll(1, g.s.params.n, {3}, Clock::now(), tools ? PieceFn(Piece) : nullptr);
  Written w;
  w.stream = f->Begin();
  for (const Job::Item& it : items) {
    bool shown = false;
    const int idx = coll.Apply(it, &shown);
    w.stream +=
        f->Step({idx, it.prompt, it.ev, shown ? &it.ev.token : nullptr, coll.choices()[idx]});
  }
  w.stream += f->End(coll.choices(), coll.usage());
  if (f->done_marker()) w.stream += SseDone();
  w.body = f->Body(coll.choices(), coll.usage());
  return w;
}

wire::Json Fold(wire::ApiKind kind, const std::string& stream) {
  wire::SseParser parser;
  std::vector<wire::SseEvent> events;
  parser.Feed(stream, &events);
  parser.Finish(&events);
  wire::StreamFold fold(kind);
  for (const wire::SseEvent& e : events) fold.Add(e);
  EXPECT_EQ(fold.bad_events(), 0);
  return fold.Result();
}

// The two readings agree on what an answer is.
void ExpectSameAnswer(const wire::Answer& streamed, const wire::Answer& whole) {
  ASSERT_EQ(streamed.choices.size(), whole.choices.size());
  for (size_t i = 0; i < whole.choices.size(); ++i) {
    SCOPED_TRACE(i);
    const wire::AnswerChoice& s = streamed.choices[i];
    const wire::AnswerChoice& w = whole.choices[i];
    EXPECT_EQ(s.text, w.text);
    EXPECT_EQ(s.finish_reason, w.finish_reason);
    ASSERT_EQ(s.tool_calls.size(), w.tool_calls.size());
    for (size_t k = 0; k < w.tool_calls.size(); ++k) {
      EXPECT_EQ(s.tool_calls[k].id, w.tool_calls[k].id);
      EXPECT_EQ(s.tool_calls[k].name, w.tool_calls[k].name);
      EXPECT_EQ(s.tool_calls[k].arguments, w.tool_calls[k].arguments);
    }
    ASSERT_EQ(s.tokens.size(), w.tokens.size());
    for (size_t k = 0; k < w.tokens.size(); ++k) {
      EXPECT_EQ(s.tokens[k].bytes, w.tokens[k].bytes);
      EXPECT_EQ(s.tokens[k].logprob, w.tokens[k].logprob);
      EXPECT_EQ(s.tokens[k].top, w.tokens[k].top);
    }
  }
}

GenerationRequest Request(WireApi api, int n, bool tools) {
  GenerationRequest g;
  g.api = api;
  g.s.params.n = n;
  g.s.include_usage = true;
  g.out.logprobs = 1;
  g.tools.tools = tools ? Tools() : Json();
  g.tools.parse = tools;
  return g;
}

const std::vector<std::string> kCall = {"<tool_call>", "{\"name\": \"f\", ", "\"arguments\": {}}",
                                        "</tool_call>"};
const std::vector<std::string> kText = {"Hello", " there"};

TEST(WireFormat, ChatStreamFoldsIntoTheBody) {
  for (bool tools : {false, true}) {
    SCOPED_TRACE(tools ? "tools" : "no tools");
    const Written w =
        Write(Request(WireApi::kChat, 2, tools), Events(tools ? kCall : kText), tools);
    const wire::Answer whole = wire::ReadAnswer(w.body, wire::ApiKind::kChat);
    ExpectSameAnswer(wire::ReadAnswer(Fold(wire::ApiKind::kChat, w.stream), wire::ApiKind::kChat),
                     whole);
    EXPECT_EQ(whole.choices[0].text, "t3\xE2\x82\xAC");
    EXPECT_EQ(*whole.choices[0].tokens[1].bytes, "\xE2\x82");  // the partial character's bytes
    EXPECT_EQ(whole.choices[1].tool_calls.size(), tools ? 1u : 0u);
    EXPECT_EQ(whole.usage["completion_tokens"], 6);
  }
}

TEST(WireFormat, CompletionsStreamFoldsIntoTheBody) {
  const Written w = Write(Request(WireApi::kCompletions, 2, false), Events(kText), false);
  const wire::Answer whole = wire::ReadAnswer(w.body, wire::ApiKind::kCompletions);
  ExpectSameAnswer(
      wire::ReadAnswer(Fold(wire::ApiKind::kCompletions, w.stream), wire::ApiKind::kCompletions),
      whole);
  EXPECT_EQ(whole.choices[1].text, "Hello there");
  EXPECT_EQ(whole.choices[1].finish_reason, "length");
}

TEST(WireFormat, ResponsesStreamEndsWithTheBody) {
  for (bool tools : {false, true}) {
    SCOPED_TRACE(tools ? "tools" : "no tools");
    GenerationRequest g = Request(WireApi::kResponses, 1, tools);
    std::vector<Job::Item> items;
    for (const Job::Item& it : Events(tools ? kCall : kText)) {
      if (it.ev.choice == 1) {  // one choice: the second one's events as the first's
        items.push_back(it);
        items.back().ev.choice = 0;
      }
    }
    const Written w = Write(g, items, tools);
    wire::Json folded = Fold(wire::ApiKind::kResponses, w.stream);
    const std::string deltas = folded.value("output_text", "");  // the fold's own: the deltas
    folded.erase("output_text");
    EXPECT_EQ(folded, w.body);  // the final event carries the body itself
    const wire::Answer whole = wire::ReadAnswer(w.body, wire::ApiKind::kResponses);
    EXPECT_EQ(whole.status, tools ? "completed" : "incomplete");
    EXPECT_EQ(whole.choices[0].tool_calls.size(), tools ? 1u : 0u);
    if (!tools) EXPECT_EQ(deltas, whole.choices[0].text);
  }
}

}  // namespace
}  // namespace stet::server
