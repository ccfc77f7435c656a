// /v1/completions' body, stream chunks and WireFormat.
#include "server/openai/completions_format.h"

#include <nlohmann/json.hpp>

namespace stet::server {

Json CompletionResponse(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                        const std::vector<std::string>& echo, std::optional<int> logprobs,
                        const UsageCounts& usage, const PieceFn& piece) {
  Json j = ResponseHeader(meta, "text_completion");
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
  Json j = ResponseHeader(meta_, "text_completion");
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
  return SseEvent(UsageChunk(meta_, "text_completion", u));
}

// ---------------------------------------------------------------------------

CompletionsFormat::CompletionsFormat(FormatContext c, std::vector<std::string> echo_text,
                                     size_t n_prompts)
    : c_(std::move(c)),
      echo_text_(std::move(echo_text)),
      stream_(c_.meta, static_cast<int>(n_prompts) * c_.n, c_.out.logprobs, c_.include_usage,
              c_.piece) {
  if (c_.out.return_token_ids) stream_.SetTokenIds(c_.prompt_ids, c_.n);
  if (c_.out.prompt_logprobs) stream_.SetPromptLogprobs(*c_.out.prompt_logprobs);
}

Json CompletionsFormat::Body(const std::vector<ChoiceResult>& choices, const UsageCounts& usage) {
  std::vector<std::string> per_choice;
  if (!echo_text_.empty()) {
    for (size_t i = 0; i < choices.size(); ++i) per_choice.push_back(echo_text_[i / c_.n]);
  }
  Json j = CompletionResponse(c_.meta, choices, per_choice, c_.out.logprobs, usage, c_.piece);
  if (c_.out.prompt_logprobs) {
    for (size_t i = 0; i < choices.size(); ++i)
      j["choices"][i]["prompt_logprobs"] =
          PromptLogprobsJson(choices[i].prompt_tokens, *c_.out.prompt_logprobs, c_.piece);
  }
  if (c_.out.return_token_ids) AddTokenIds(&j, choices, c_.prompt_ids, c_.n, /*chat=*/false);
  return j;
}

std::string CompletionsFormat::Begin() {
  std::string out;
  if (!echo_text_.empty() && !c_.out.logprobs) {
    for (size_t p = 0; p < echo_text_.size(); ++p) {
      for (int k = 0; k < c_.n; ++k)
        out += stream_.Echo(static_cast<int>(p) * c_.n + k, echo_text_[p], {});
    }
  }
  return out;
}

std::string CompletionsFormat::PromptScored(const StreamStep& s) {
  if (!echo_text_.empty() && c_.out.logprobs)  // the echo waited for these scores
    return stream_.Echo(s.index, echo_text_[s.prompt], s.ev.prompt_tokens);
  return c_.out.prompt_logprobs ? stream_.PromptScores(s.index, s.ev.prompt_tokens) : "";
}

std::string CompletionsFormat::Token(const StreamStep& s) {
  return stream_.Token(s.index, s.ev.text_delta, s.shown);
}

std::string CompletionsFormat::Finished(const StreamStep& s) {
  return stream_.Finish(s.index, s.ev.text_delta, s.ev.finish);
}

}  // namespace stet::server
