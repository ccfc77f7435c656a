// /v1/chat/completions' body, stream chunks and WireFormat.
#include "server/openai/chat_format.h"

#include <nlohmann/json.hpp>

namespace stet::server {

Json ChatResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, bool logprobs,
                  int top_logprobs, const UsageCounts& usage, const PieceFn& piece,
                  const ToolParseFn& tools) {
  Json j = ResponseHeader(meta, "chat.completion");
  Json arr = Json::array();
  UsageCounts counted = usage;
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    Json ch = Json::object();
    ch["index"] = i;
    Json msg = Json::object();
    msg["role"] = "assistant";
    msg["content"] = c.text;
    msg["refusal"] = nullptr;
    Json finish = FinishReasonText(c.finish);
    if (tools) {
      ParsedAnswer p = tools(static_cast<int>(i), c);
      if (p.reasoning) {
        msg["content"] = p.content;
        msg["reasoning_content"] = *p.reasoning;
        counted.reasoning_tokens = counted.reasoning_tokens.value_or(0) + p.reasoning_tokens;
      }
      if (!p.calls.empty()) {
        msg["content"] = p.content.empty() ? Json(nullptr) : Json(p.content);
        msg["tool_calls"] = ToolCallsJson(p.calls, /*indexed=*/false);
        finish = "tool_calls";
      }
    }
    ch["message"] = std::move(msg);
    ch["logprobs"] = logprobs ? ChatLogprobs(c.tokens, top_logprobs, piece) : Json(nullptr);
    ch["finish_reason"] = std::move(finish);
    arr.push_back(std::move(ch));
  }
  j["choices"] = std::move(arr);
  j["usage"] = UsageJson(counted);
  return j;
}

ChatStream::ChatStream(ResponseMeta meta, bool logprobs, int top_logprobs, bool include_usage,
                       PieceFn piece)
    : meta_(std::move(meta)),
      logprobs_(logprobs),
      top_logprobs_(top_logprobs),
      include_usage_(include_usage),
      piece_(std::move(piece)) {}

Json ChatStream::Chunk(int index, Json delta, Json logprobs, Json finish,
                       const std::vector<TokenOut>& toks) const {
  Json j = ResponseHeader(meta_, "chat.completion.chunk");
  Json ch = Json::object();
  ch["index"] = index;
  ch["delta"] = std::move(delta);
  ch["logprobs"] = std::move(logprobs);
  ch["finish_reason"] = std::move(finish);
  if (token_ids_) {
    Json ids = Json::array();
    for (const TokenOut& t : toks) ids.push_back(t.id);
    ch["token_ids"] = std::move(ids);
  }
  j["choices"] = Json::array({std::move(ch)});
  if (include_usage_) j["usage"] = nullptr;
  return j;
}

std::string ChatStream::Start(int index) {
  Json delta = Json::object();
  delta["role"] = "assistant";
  delta["content"] = "";
  Json j = Chunk(index, std::move(delta), nullptr, nullptr);
  if (token_ids_) j["prompt_token_ids"] = prompt_;
  return SseEvent(j);
}

std::string ChatStream::Token(int index, const std::string& text_delta, const TokenOut* tok,
                              const ChoiceResult& folded) {
  if (parse_) return TokenParsed(index, tok, folded);
  Json lp = nullptr;
  if (logprobs_ && tok) lp = ChatLogprobs({*tok}, top_logprobs_, piece_);
  if (text_delta.empty() && lp.is_null() && !(token_ids_ && tok)) return "";
  Json delta = Json::object();
  delta["content"] = text_delta;
  std::vector<TokenOut> toks;
  if (tok) toks.push_back(*tok);
  return SseEvent(Chunk(index, std::move(delta), std::move(lp), nullptr, toks));
}

Json ChatStream::PartsDelta(int index, const SafeParts& parts) {
  Sent& sent = sent_[index];
  Json delta = Json::object();
  if (parts.reasoning.size() > sent.reasoning) {
    delta["reasoning_content"] = parts.reasoning.substr(sent.reasoning);
    sent.reasoning = parts.reasoning.size();
  }
  if (parts.content.size() > sent.content) {
    delta["content"] = parts.content.substr(sent.content);
    sent.content = parts.content.size();
  }
  return delta;
}

std::string ChatStream::TokenParsed(int index, const TokenOut* tok, const ChoiceResult& folded) {
  Json delta = PartsDelta(index, safe_ ? safe_(folded) : SafeParts{});
  Json lp = nullptr;
  if (logprobs_ && tok) lp = ChatLogprobs({*tok}, top_logprobs_, piece_);
  if (delta.empty() && lp.is_null() && !(token_ids_ && tok)) return "";
  std::vector<TokenOut> toks;
  if (tok) toks.push_back(*tok);
  return SseEvent(Chunk(index, std::move(delta), std::move(lp), nullptr, toks));
}

std::string ChatStream::FinishParsed(int index, const ChoiceResult& h) {
  const ParsedAnswer p = parse_(index, h);
  if (p.reasoning) reasoning_tokens_ = reasoning_tokens_.value_or(0) + p.reasoning_tokens;
  std::string out;
  Json rest = PartsDelta(index, {p.reasoning.value_or(""), p.content, p.reasoning.has_value()});
  if (!rest.empty()) out += SseEvent(Chunk(index, std::move(rest), nullptr, nullptr));
  if (p.calls.empty()) {
    return out + SseEvent(Chunk(index, Json::object(), nullptr, FinishReasonText(h.finish)));
  }
  for (size_t k = 0; k < p.calls.size(); ++k) {
    const ToolCall& call = p.calls[k];
    Json head = ToolCallsJson({call}, /*indexed=*/true)[0];
    head["index"] = k;
    head["function"]["arguments"] = "";
    out += SseEvent(
        Chunk(index, Json{{"tool_calls", Json::array({std::move(head)})}}, nullptr, nullptr));
    for (const std::string& piece : ArgumentPieces(call.arguments)) {
      Json d = Json::object();
      d["index"] = k;
      d["function"] = Json{{"arguments", piece}};
      out += SseEvent(
          Chunk(index, Json{{"tool_calls", Json::array({std::move(d)})}}, nullptr, nullptr));
    }
  }
  return out + SseEvent(Chunk(index, Json::object(), nullptr, "tool_calls"));
}

std::string ChatStream::Finish(int index, const std::string& text_delta, FinishReason why,
                               const ChoiceResult& folded) {
  if (parse_) return FinishParsed(index, folded);
  Json delta = Json::object();
  if (!text_delta.empty()) delta["content"] = text_delta;
  return SseEvent(Chunk(index, std::move(delta), nullptr, FinishReasonText(why)));
}

std::string ChatStream::Usage(const UsageCounts& u) {
  if (!include_usage_) return "";
  UsageCounts counted = u;
  counted.reasoning_tokens = reasoning_tokens_;
  return SseEvent(UsageChunk(meta_, "chat.completion.chunk", counted));
}

// ---------------------------------------------------------------------------

ChatFormat::ChatFormat(FormatContext c)
    : c_(std::move(c)),
      stream_(c_.meta, c_.out.logprobs.has_value(), c_.out.logprobs.value_or(0), c_.include_usage,
              c_.piece) {
  if (c_.out.return_token_ids && !c_.prompt_ids.empty()) stream_.SetTokenIds(c_.prompt_ids[0]);
  if (c_.tools) stream_.SetAnswerParsing(c_.tools, c_.safe);
}

Json ChatFormat::Body(const std::vector<ChoiceResult>& choices, const UsageCounts& usage) {
  Json j = ChatResponse(c_.meta, choices, c_.out.logprobs.has_value(), c_.out.logprobs.value_or(0),
                        usage, c_.piece, c_.tools);
  if (c_.out.return_token_ids) AddTokenIds(&j, choices, c_.prompt_ids, c_.n, /*chat=*/true);
  return j;
}

std::string ChatFormat::Begin() {
  std::string out;
  for (int k = 0; k < c_.n; ++k) out += stream_.Start(k);
  return out;
}

std::string ChatFormat::Token(const StreamStep& s) {
  return stream_.Token(s.index, s.ev.text_delta, s.shown, s.choice);
}

std::string ChatFormat::Finished(const StreamStep& s) {
  return stream_.Finish(s.index, s.ev.text_delta, s.ev.finish, s.choice);
}

}  // namespace stet::server
