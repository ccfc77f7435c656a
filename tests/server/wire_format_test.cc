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
#include "server/pipeline.h"
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

// Id 8 is a control token: the text leaves it out, the raw pieces write it.
std::string RawPiece(int32_t id) { return id == 8 ? "<|ctl|>" : Piece(id); }

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

// `tools`: answers are read for Hermes calls; `reasoning`: for a <think> block.
Written Write(const GenerationRequest& g, const std::vector<Job::Item>& items, bool tools,
              bool reasoning = false) {
  PreparedPrompts p;
  p.params.resize(1);
  p.params[0].n = g.s.params.n;
  ResponseMeta meta{"id-1", 7, "m", "fp_x", 5};
  ToolParseFn parse;
  SafePartsFn safe;
  if (tools || reasoning) {
    auto s = std::make_shared<AnswerSyntax>();
    if (tools) {
      s->format = &HermesToolFormat();
      s->tools = Tools();
      s->seed = 5;
    }
    if (reasoning) s->reasoning = ReasoningSyntax{};
    parse = AnswerParser(s);
    safe = AnswerPrefix(s);
  }
  auto f = MakeWireFormat(g, p, meta, Piece, parse, safe);
  Collector coll(1, g.s.params.n, {3}, Clock::now(), tools ? PieceFn(RawPiece) : nullptr);
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
    if (!tools) {
      EXPECT_EQ(deltas, whole.choices[0].text);
    }
  }
}

// The chunks of a chat stream, parsed.
std::vector<Json> Chunks(const std::string& stream) {
  wire::SseParser parser;
  std::vector<wire::SseEvent> events;
  parser.Feed(stream, &events);
  parser.Finish(&events);
  std::vector<Json> out;
  for (const wire::SseEvent& e : events) {
    if (e.data != "[DONE]") out.push_back(Json::parse(e.data));
  }
  return out;
}

// The body's choices without what a stream never carries (refusal: null), as
// text; and the stream's, folded.
std::string BodyChoices(const Written& w) {
  Json c = w.body["choices"];
  for (Json& ch : c) {
    ch["message"].erase("refusal");
    if (ch["logprobs"].is_object()) ch["logprobs"].erase("refusal");
  }
  return c.dump();
}
std::string FoldedChoices(const Written& w) {
  return Fold(wire::ApiKind::kChat, w.stream)["choices"].dump();
}

// One choice answering `pieces`, one token each (an empty text for id 8).
std::vector<Job::Item> OneChoice(const std::vector<std::string>& pieces, FinishReason why) {
  std::vector<Job::Item> items;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const int32_t id = pieces[i] == "<|ctl|>" ? 8 : static_cast<int32_t>(40 + i);
    if (id != 8) Pieces()[id] = pieces[i];
    items.push_back({0, TokenEvent(0, id, id == 8 ? "" : pieces[i]), Clock::now()});
  }
  items.push_back({0, FinishEvent(0, why), Clock::now()});
  return items;
}

// The chat stream folded equals the body's choices byte for byte; returns the
// content sent as the tokens came (the chunks that carry a token's logprobs),
// before the end.
std::string ExpectChatFoldEqualsBody(const std::vector<std::string>& pieces, bool tools,
                                     bool reasoning) {
  GenerationRequest g = Request(WireApi::kChat, 1, tools);
  const Written w = Write(g, OneChoice(pieces, FinishReason::kStop), tools, reasoning);
  EXPECT_EQ(FoldedChoices(w), BodyChoices(w)) << w.stream;
  std::string live;
  for (const Json& c : Chunks(w.stream)) {
    if (c["choices"].empty() || c["choices"][0]["logprobs"].is_null()) continue;
    const Json& d = c["choices"][0]["delta"];
    if (d.contains("content")) live += d["content"].get<std::string>();
  }
  return live;
}

TEST(WireFormat, ChatStreamsContentUntilACallCanStart) {
  // Text, then a Hermes call: the text streams while no call can have begun
  // (the marker's first bytes hold it back), the call follows whole.
  const std::vector<std::string> call = {
      "Let",         " me",    " check.",
      " <tool",      "_call>", "{\"name\": \"f\", \"arguments\": {\"a\": [1, 2]}}",
      "</tool_call>"};
  const std::vector<std::string> prefix(call.begin(), call.begin() + 4);
  // The content went out as it came, before the call began.
  EXPECT_EQ(ExpectChatFoldEqualsBody(call, true, false), "Let me check.");
  // Without a call the held "<tool" goes out once it cannot be the marker.
  std::vector<std::string> text = prefix;
  text.push_back("bar> done");
  EXPECT_EQ(ExpectChatFoldEqualsBody(text, true, false), "Let me check. <toolbar> done");
  // A control token the text leaves out stops what streams at it (the rest at the end).
  EXPECT_EQ(ExpectChatFoldEqualsBody({"Hi", "<|ctl|>", " there"}, true, false), "Hi");
  // Leading blanks: trimmed were a call to follow, kept without one: held to the end.
  EXPECT_EQ(ExpectChatFoldEqualsBody({"\n", "Hi", " there"}, true, false), "");
  // Without tools everything streams as it comes.
  EXPECT_EQ(ExpectChatFoldEqualsBody({"\n", "Hi", " there"}, false, false), "\nHi there");
}

TEST(WireFormat, ChatToolCallDeltasAreOpenAIs) {
  GenerationRequest g = Request(WireApi::kChat, 1, true);
  g.out.logprobs.reset();
  const Written w = Write(g, OneChoice(kCall, FinishReason::kStop), true);
  std::vector<Json> calls;
  for (const Json& c : Chunks(w.stream)) {
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("tool_calls"))
      calls.push_back(c["choices"][0]["delta"]["tool_calls"][0]);
  }
  ASSERT_EQ(calls.size(), 2u) << w.stream;
  EXPECT_EQ(calls[0],
            Json::parse(R"({"index": 0, "id": ")" + ToolCallId(5, 0, 0) +
                        R"(", "type": "function", "function": {"name": "f", "arguments": ""}})"));
  EXPECT_EQ(calls[1], Json::parse(R"({"index": 0, "function": {"arguments": "{}"}})"));
  const std::vector<Json> chunks = Chunks(w.stream);
  EXPECT_EQ(chunks[chunks.size() - 2]["choices"][0]["finish_reason"], "tool_calls");
}

TEST(WireFormat, ReasoningSplitsIntoItsOwnField) {
  const std::vector<std::string> think = {"<th",  "ink>", "\nPlan", ": call f.", "\n</th",
                                          "ink>", "\n\n", "Done",   "."};
  for (bool tools : {false, true}) {
    SCOPED_TRACE(tools ? "tools" : "no tools");
    GenerationRequest g = Request(WireApi::kChat, 1, tools);
    const Written w = Write(g, OneChoice(think, FinishReason::kStop), tools, true);
    const Json& m = w.body["choices"][0]["message"];
    EXPECT_EQ(m["reasoning_content"], "\nPlan: call f.\n");
    EXPECT_EQ(m["content"], "Done.");
    EXPECT_EQ(FoldedChoices(w), BodyChoices(w));
    // usage counts the tokens up to the one that closes the block, streamed and not.
    EXPECT_EQ(w.body["usage"]["completion_tokens_details"],
              Json::parse(R"({"reasoning_tokens": 6})"));
    EXPECT_EQ(Chunks(w.stream).back()["usage"], w.body["usage"]);
    // The reasoning streams in pieces, before any content.
    std::vector<std::string> reasoning;
    for (const Json& c : Chunks(w.stream)) {
      if (!c["choices"].empty() && c["choices"][0]["delta"].contains("reasoning_content"))
        reasoning.push_back(c["choices"][0]["delta"]["reasoning_content"]);
    }
    EXPECT_GE(reasoning.size(), 2u);
  }
  // Unclosed at the end: all of it is reasoning.
  const Written cut =
      Write(Request(WireApi::kChat, 1, false),
            OneChoice({"<think>", "still", " going"}, FinishReason::kLength), false, true);
  EXPECT_EQ(cut.body["choices"][0]["message"]["reasoning_content"], "still going");
  EXPECT_EQ(cut.body["choices"][0]["message"]["content"], "");
  EXPECT_EQ(cut.body["usage"]["completion_tokens_details"]["reasoning_tokens"], 3);
  // No block: the text untouched.
  const Written plain = Write(Request(WireApi::kChat, 1, false),
                              OneChoice({"<b>", "hi"}, FinishReason::kStop), false, true);
  EXPECT_EQ(plain.body["choices"][0]["message"]["content"], "<b>hi");
  EXPECT_FALSE(plain.body["choices"][0]["message"].contains("reasoning_content"));
  // ... and its usage as before reasoning was counted (no completion_tokens_details).
  EXPECT_FALSE(plain.body["usage"].contains("completion_tokens_details"));
  EXPECT_FALSE(Chunks(plain.stream).back()["usage"].contains("completion_tokens_details"));
}

TEST(WireFormat, ResponsesStreamsReasoningTextAndCalls) {
  const std::vector<std::string> pieces = {"<think>",      "hmm",
                                           "</think>",     "Sure.",
                                           " <tool_call>", "{\"name\": \"f\", \"arguments\": {}}"};
  GenerationRequest g = Request(WireApi::kResponses, 1, true);
  const Written w = Write(g, OneChoice(pieces, FinishReason::kStop), true, true);
  wire::Json folded = Fold(wire::ApiKind::kResponses, w.stream);
  folded.erase("output_text");
  EXPECT_EQ(folded, w.body);
  const Json& out = w.body["output"];
  ASSERT_EQ(out.size(), 3u) << out;
  EXPECT_EQ(out[0]["type"], "reasoning");
  EXPECT_EQ(out[0]["content"][0]["text"], "hmm");
  EXPECT_EQ(out[1]["content"][0]["text"], "Sure.");
  EXPECT_EQ(out[2]["type"], "function_call");
  EXPECT_EQ(w.body["usage"]["output_tokens_details"]["reasoning_tokens"], 3);
  // Events in item order, each item's deltas before its end, the text before the call.
  std::vector<std::pair<std::string, int>> seen;
  for (const Json& e : Chunks(w.stream)) seen.push_back({e["type"], e.value("output_index", -1)});
  const auto at = [&](const std::string& type) {
    for (size_t i = 0; i < seen.size(); ++i)
      if (seen[i].first == type) return static_cast<int>(i);
    return -1;
  };
  EXPECT_LT(at("response.reasoning_text.delta"), at("response.reasoning_text.done"));
  EXPECT_LT(at("response.reasoning_text.done"), at("response.output_text.delta"));
  EXPECT_LT(at("response.output_text.delta"), at("response.function_call_arguments.delta"));
}

}  // namespace
}  // namespace stet::server
