// JSON shapes of completion responses and stream chunks.
#include "server/openai/response.h"

#include <nlohmann/json.hpp>

#include "http/json_fields.h"

namespace stet::server {

namespace {

Json Header(const ResponseMeta& meta, const char* object) {
  Json j = Json::object();
  j["id"] = meta.id;
  j["object"] = object;
  j["created"] = meta.created;
  j["model"] = meta.model;
  j["system_fingerprint"] = meta.fingerprint;
  j["seed"] = meta.seed;
  return j;
}

Json Bytes(const std::string& s) {
  Json b = Json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

Json ChatTokenEntry(const std::string& piece, float logprob) {
  Json e = Json::object();
  e["token"] = SanitizeUtf8(piece);
  e["logprob"] = logprob;
  e["bytes"] = Bytes(piece);
  return e;
}

}  // namespace

const char* FinishReasonText(FinishReason r) { return FinishReasonName(r); }

Json UsageJson(const UsageCounts& u) {
  Json j = Json::object();
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  Json details = Json::object();
  details["cached_tokens"] = u.cached_tokens;
  j["prompt_tokens_details"] = std::move(details);
  return j;
}

Json CompletionLogprobs(const std::vector<TokenOut>& tokens, bool first_unscored, size_t offset,
                        int top_n, const PieceFn& piece) {
  Json toks = Json::array(), lps = Json::array(), tops = Json::array(), offs = Json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const TokenOut& t = tokens[i];
    const std::string text = t.text.empty() ? piece(t.id) : t.text;
    toks.push_back(SanitizeUtf8(text));
    const bool unscored = first_unscored && i == 0;
    lps.push_back(unscored ? Json(nullptr) : Json(t.logprob));
    if (unscored || top_n <= 0) {
      tops.push_back(nullptr);
    } else {
      Json d = Json::object();
      for (size_t k = 0; k < t.top.size() && static_cast<int>(k) < top_n; ++k) {
        const std::string key = SanitizeUtf8(piece(t.top[k].id));
        if (!d.contains(key))
          d[key] = t.top[k].logprob;  // best first: keep the higher of equal texts
      }
      tops.push_back(std::move(d));
    }
    offs.push_back(offset);
    offset += text.size();
  }
  Json j = Json::object();
  j["tokens"] = std::move(toks);
  j["token_logprobs"] = std::move(lps);
  j["top_logprobs"] = std::move(tops);
  j["text_offset"] = std::move(offs);
  return j;
}

Json ChatLogprobs(const std::vector<TokenOut>& tokens, int top_n, const PieceFn& piece) {
  Json content = Json::array();
  for (const TokenOut& t : tokens) {
    Json e = ChatTokenEntry(t.text.empty() ? piece(t.id) : t.text, t.logprob);
    Json tops = Json::array();
    for (size_t k = 0; k < t.top.size() && static_cast<int>(k) < top_n; ++k) {
      tops.push_back(ChatTokenEntry(piece(t.top[k].id), t.top[k].logprob));
    }
    e["top_logprobs"] = std::move(tops);
    content.push_back(std::move(e));
  }
  Json j = Json::object();
  j["content"] = std::move(content);
  j["refusal"] = nullptr;
  return j;
}

Json PromptLogprobsJson(const std::vector<TokenOut>& prompt_tokens, int k, const PieceFn& piece) {
  Json arr = Json::array();
  for (size_t i = 0; i < prompt_tokens.size(); ++i) {
    if (i == 0) {  // nothing before it to score it
      arr.push_back(nullptr);
      continue;
    }
    const TokenOut& t = prompt_tokens[i];
    Json d = Json::object();
    const auto entry = [&piece](int32_t id, float logprob, Json rank) {
      Json e = Json::object();
      e["logprob"] = logprob;
      e["rank"] = std::move(rank);
      e["decoded_token"] = SanitizeUtf8(piece(id));
      return e;
    };
    Json rank = nullptr;
    for (size_t r = 0; r < t.top.size(); ++r) {
      if (t.top[r].id == t.id) rank = static_cast<int>(r) + 1;
    }
    d[std::to_string(t.id)] = entry(t.id, t.logprob, rank);
    for (size_t r = 0; r < t.top.size() && static_cast<int>(r) < k; ++r) {
      const std::string key = std::to_string(t.top[r].id);
      if (!d.contains(key)) d[key] = entry(t.top[r].id, t.top[r].logprob, static_cast<int>(r) + 1);
    }
    arr.push_back(std::move(d));
  }
  return arr;
}

Json CompletionResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                        const std::vector<std::string>& echo, std::optional<int> logprobs,
                        const UsageCounts& usage, const PieceFn& piece) {
  Json j = Header(meta, "text_completion");
  Json arr = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    const std::string& e = i < echo.size() ? echo[i] : std::string();
    Json ch = Json::object();
    ch["index"] = i;
    ch["text"] = e + c.text;
    if (logprobs) {
      std::vector<TokenOut> all = c.prompt_tokens;
      all.insert(all.end(), c.tokens.begin(), c.tokens.end());
      const bool echoed = !c.prompt_tokens.empty() && i < echo.size();
      if (!echoed) all.erase(all.begin(), all.begin() + c.prompt_tokens.size());
      ch["logprobs"] = CompletionLogprobs(all, echoed, 0, *logprobs, piece);
      if (echoed) {
        // Generated tokens start right after the echoed text.
        auto& offs = ch["logprobs"]["text_offset"];
        size_t off = e.size();
        for (size_t k = c.prompt_tokens.size(); k < all.size(); ++k) {
          offs[k] = off;
          off += all[k].text.size();
        }
      }
    } else {
      ch["logprobs"] = nullptr;
    }
    ch["finish_reason"] = FinishReasonText(c.finish);
    arr.push_back(std::move(ch));
  }
  j["choices"] = std::move(arr);
  j["usage"] = UsageJson(usage);
  return j;
}

Json ChatResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, bool logprobs,
                  int top_logprobs, const UsageCounts& usage, const PieceFn& piece,
                  const ToolParseFn& tools) {
  Json j = Header(meta, "chat.completion");
  Json arr = Json::array();
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
  j["usage"] = UsageJson(usage);
  return j;
}

std::string SseEvent(const Json& j) { return "data: " + Dump(j) + "\n\n"; }

// ---------------------------------------------------------------------------

CompletionStream::CompletionStream(ResponseMeta meta, int n_choices, std::optional<int> logprobs,
                                   bool include_usage, PieceFn piece)
    : meta_(std::move(meta)),
      logprobs_(logprobs),
      include_usage_(include_usage),
      piece_(std::move(piece)),
      offset_(n_choices, 0) {}

void CompletionStream::SetTokenIds(std::vector<std::vector<int32_t>> prompts, int n) {
  token_ids_ = true;
  prompts_ = std::move(prompts);
  n_ = n;
  prompt_sent_.assign(offset_.size(), false);
}

Json CompletionStream::Chunk(int index, const std::string& text, Json logprobs, Json finish,
                             const TokenOut* tok) {
  Json j = Header(meta_, "text_completion");
  Json ch = Json::object();
  ch["index"] = index;
  ch["text"] = text;
  ch["logprobs"] = std::move(logprobs);
  ch["finish_reason"] = std::move(finish);
  if (token_ids_) {
    const size_t prompt = n_ > 0 ? static_cast<size_t>(index / n_) : 0;
    if (!prompt_sent_[index] && prompt < prompts_.size()) ch["prompt_token_ids"] = prompts_[prompt];
    prompt_sent_[index] = true;
    ch["token_ids"] = tok ? Json::array({tok->id}) : Json::array();
  }
  j["choices"] = Json::array({std::move(ch)});
  if (include_usage_) j["usage"] = nullptr;
  return j;
}

std::string CompletionStream::Echo(int index, const std::string& text,
                                   const std::vector<TokenOut>& prompt_tokens) {
  Json lp = nullptr;
  if (logprobs_) lp = CompletionLogprobs(prompt_tokens, true, 0, *logprobs_, piece_);
  offset_[index] += text.size();
  Json j = Chunk(index, text, std::move(lp), nullptr);
  if (prompt_logprobs_)
    j["choices"][0]["prompt_logprobs"] =
        PromptLogprobsJson(prompt_tokens, *prompt_logprobs_, piece_);
  return SseEvent(j);
}

std::string CompletionStream::PromptScores(int index, const std::vector<TokenOut>& prompt_tokens) {
  Json j = Chunk(index, "", nullptr, nullptr);
  j["choices"][0]["prompt_logprobs"] =
      PromptLogprobsJson(prompt_tokens, prompt_logprobs_.value_or(0), piece_);
  return SseEvent(j);
}

std::string CompletionStream::Token(int index, const std::string& text_delta, const TokenOut* tok) {
  Json lp = nullptr;
  if (logprobs_ && tok) lp = CompletionLogprobs({*tok}, false, offset_[index], *logprobs_, piece_);
  // With token ids, a token that releases no text (held back by a stop string) still has its chunk.
  if (text_delta.empty() && lp.is_null() && !(token_ids_ && tok)) return "";
  offset_[index] += text_delta.size();
  return SseEvent(Chunk(index, text_delta, std::move(lp), nullptr, tok));
}

std::string CompletionStream::Finish(int index, const std::string& text_delta, FinishReason why) {
  offset_[index] += text_delta.size();
  return SseEvent(Chunk(index, text_delta, nullptr, FinishReasonText(why)));
}

std::string CompletionStream::Usage(const UsageCounts& u) {
  if (!include_usage_) return "";
  Json j = Header(meta_, "text_completion");
  j["choices"] = Json::array();
  j["usage"] = UsageJson(u);
  return SseEvent(j);
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
  Json j = Header(meta_, "chat.completion.chunk");
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

std::string ChatStream::Token(int index, const std::string& text_delta, const TokenOut* tok) {
  if (parse_) {
    ChoiceResult& h = held_[index];
    h.text += text_delta;
    if (tok) h.tokens.push_back(*tok);
    return "";
  }
  Json lp = nullptr;
  if (logprobs_ && tok) lp = ChatLogprobs({*tok}, top_logprobs_, piece_);
  if (text_delta.empty() && lp.is_null() && !(token_ids_ && tok)) return "";
  Json delta = Json::object();
  delta["content"] = text_delta;
  std::vector<TokenOut> toks;
  if (tok) toks.push_back(*tok);
  return SseEvent(Chunk(index, std::move(delta), std::move(lp), nullptr, toks));
}

std::string ChatStream::FinishHeld(int index, const std::string& text_delta, FinishReason why) {
  ChoiceResult& h = held_[index];
  h.text += text_delta;
  h.finish = why;
  const ParsedAnswer p = parse_(index, h);
  std::string out;
  if (p.calls.empty()) {
    Json delta = Json::object();
    delta["content"] = h.text;
    Json lp = logprobs_ ? ChatLogprobs(h.tokens, top_logprobs_, piece_) : Json(nullptr);
    out = SseEvent(Chunk(index, std::move(delta), std::move(lp), nullptr, h.tokens));
    return out + SseEvent(Chunk(index, Json::object(), nullptr, FinishReasonText(why)));
  }
  const Json calls = ToolCallsJson(p.calls, /*indexed=*/true);
  for (size_t k = 0; k < calls.size(); ++k) {
    Json delta = Json::object();
    if (k == 0 && !p.content.empty()) delta["content"] = p.content;
    delta["tool_calls"] = Json::array({calls[k]});
    Json lp = k == 0 && logprobs_ ? ChatLogprobs(h.tokens, top_logprobs_, piece_) : Json(nullptr);
    out += SseEvent(Chunk(index, std::move(delta), std::move(lp), nullptr,
                          k == 0 ? h.tokens : std::vector<TokenOut>{}));
  }
  return out + SseEvent(Chunk(index, Json::object(), nullptr, "tool_calls"));
}

std::string ChatStream::Finish(int index, const std::string& text_delta, FinishReason why) {
  if (parse_) return FinishHeld(index, text_delta, why);
  Json delta = Json::object();
  if (!text_delta.empty()) delta["content"] = text_delta;
  return SseEvent(Chunk(index, std::move(delta), nullptr, FinishReasonText(why)));
}

std::string ChatStream::Usage(const UsageCounts& u) {
  if (!include_usage_) return "";
  Json j = Header(meta_, "chat.completion.chunk");
  j["choices"] = Json::array();
  j["usage"] = UsageJson(u);
  return SseEvent(j);
}

}  // namespace stet::server
