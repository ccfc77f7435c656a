// The parts every wire shape writes: header, usage, logprobs, SSE framing.
#include "server/openai/response.h"

#include <nlohmann/json.hpp>

#include "base/json_text.h"
#include "http/json_fields.h"
#include "wire/sse.h"

namespace stet::server {

namespace {

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

Json ResponseHeader(const ResponseMeta& meta, const char* object) {
  Json j = Json::object();
  j["id"] = meta.id;
  j["object"] = object;
  j["created"] = meta.created;
  j["model"] = meta.model;
  j["system_fingerprint"] = meta.fingerprint;
  j["seed"] = meta.seed;
  return j;
}

Json UsageChunk(const ResponseMeta& meta, const char* object, const UsageCounts& u) {
  Json j = ResponseHeader(meta, object);
  j["choices"] = Json::array();
  j["usage"] = UsageJson(u);
  return j;
}

Json UsageJson(const UsageCounts& u) {
  Json j = Json::object();
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  Json details = Json::object();
  details["cached_tokens"] = u.cached_tokens;
  j["prompt_tokens_details"] = std::move(details);
  if (u.reasoning_tokens)
    j["completion_tokens_details"] = Json{{"reasoning_tokens", *u.reasoning_tokens}};
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

void AddTokenIds(Json* response, const std::vector<ChoiceResult>& choices,
                 const std::vector<std::vector<int32_t>>& prompts, int n, bool chat) {
  Json& arr = (*response)["choices"];
  for (size_t i = 0; i < choices.size() && i < arr.size(); ++i) {
    Json ids = Json::array();
    for (const TokenOut& t : choices[i].tokens) ids.push_back(t.id);
    if (!chat && n > 0 && i / n < prompts.size()) arr[i]["prompt_token_ids"] = prompts[i / n];
    arr[i]["token_ids"] = std::move(ids);
  }
  if (chat && !prompts.empty()) (*response)["prompt_token_ids"] = prompts[0];
}

std::string SseEvent(const Json& j) { return wire::SseData(Dump(j)); }

std::vector<std::string> ArgumentPieces(const std::string& json) {
  std::vector<std::string> pieces;
  size_t start = 0;
  JsonStringTracker strings;
  for (size_t i = 0; i < json.size(); ++i) {
    const char ch = json[i];
    if (strings.InString(ch)) continue;
    if (ch == ':' || ch == ',') {
      pieces.push_back(json.substr(start, i + 1 - start));
      start = i + 1;
    }
  }
  if (start < json.size() || pieces.empty()) pieces.push_back(json.substr(start));
  return pieces;
}

}  // namespace stet::server
