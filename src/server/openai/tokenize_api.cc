// Bodies of the tokenizer and template endpoints. Text is tokenized as
// /v1/completions tokenizes it (special-token text parsed), messages as
// /v1/chat/completions renders and tokenizes them (ChatPrompt), so what these
// endpoints say is what generation sees.
#include "server/openai/tokenize_api.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "http/api_error.h"
#include "http/json_fields.h"

namespace stet::server {

namespace {

// "model" is optional here (llama.cpp sends none); when given it must name the served model.
std::optional<ApiError> CheckModel(const Json& body, const ServedModel& served) {
  auto it = body.find("model");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_string())
    return BadRequest(std::string("'model' must be a string, not ") + TypeName(*it), "model");
  if (!served.Matches(it->get<std::string>())) return ModelNotFound(it->get<std::string>());
  return std::nullopt;
}

std::optional<ApiError> CheckTextBytes(const std::string& text, const TokenizerView& v,
                                       const char* param) {
  if (text.size() <= v.max_text_bytes) return std::nullopt;
  return BadRequest("'" + std::string(param) + "' is " + std::to_string(text.size()) +
                        " bytes, over this server's limit of " + std::to_string(v.max_text_bytes) +
                        " bytes for the tokenizer endpoints (the most text that can fit the "
                        "context of " +
                        std::to_string(v.n_ctx) +
                        " tokens, and at least 1 MiB); it was refused without tokenizing it.",
                    param, "context_length_exceeded");
}

std::optional<ApiError> CheckTokensReturned(size_t n, const TokenizerView& v, const char* what) {
  if (n <= v.max_tokens_returned) return std::nullopt;
  ApiError e = BadRequest(std::string(what) + " would hold " + std::to_string(n) +
                              " tokens; this server returns at most " +
                              std::to_string(v.max_tokens_returned) +
                              " per request (4x the context, and at least 16384). Send less text.",
                          "", "too_many_tokens");
  e.status = 413;
  return e;
}

Json Bytes(const std::string& s) {
  Json b = Json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

Json IdArray(const std::vector<int32_t>& ids) {
  Json a = Json::array();
  for (int32_t id : ids) a.push_back(id);
  return a;
}

// The messages' prompt, rendered with the request's options (as chat renders it) and the
// template clock: metadata.stet_clock, else now.
ApiOr<std::string> RenderMessages(const Json& body, const TokenizerView& v,
                                  std::optional<int64_t> now_unix) {
  Json messages, tools;
  STET_API_TRY(ParseMessages(body, &messages));
  STET_API_TRY(ParseTools(body, &tools));
  auto options = ReadChatPromptOptions(body, TemplateClock(now_unix));
  if (!options.ok()) return options.error();
  return v.chat.Render(messages, tools, *options);
}

ApiOr<Json> TokenizeLlamaCpp(const Json& body, const TokenizerView& v) {
  auto c = body.find("content");
  if (!c->is_string())
    return BadRequest(std::string("'content' must be a string, not ") + TypeName(*c), "content");
  bool add_special = false, parse_special = true, with_pieces = false;
  STET_API_TRY(ReadBool(body, "add_special", &add_special));
  STET_API_TRY(ReadBool(body, "parse_special", &parse_special));
  STET_API_TRY(ReadBool(body, "with_pieces", &with_pieces));
  STET_API_TRY(CheckTextBytes(c->get_ref<const std::string&>(), v, "content"));
  const std::vector<int32_t> ids = v.tok.Encode(c->get<std::string>(), add_special, parse_special);
  if (with_pieces) STET_API_TRY(CheckTokensReturned(ids.size(), v, "The answer with_pieces"));
  Json tokens = Json::array();
  for (int32_t id : ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    const std::string piece = v.tok.TokenToPiece(id, /*render_special=*/true);
    Json t = Json::object();
    t["id"] = id;
    t["piece"] = IsValidUtf8(piece) ? Json(piece) : Bytes(piece);
    tokens.push_back(std::move(t));
  }
  Json out = Json::object();
  out["tokens"] = std::move(tokens);
  return out;
}

}  // namespace

ApiOr<Json> TokenizeBody(const Json& body, const TokenizerView& v,
                         std::optional<int64_t> now_unix) {
  STET_API_TRY(CheckModel(body, v.model));
  const bool has_prompt = body.contains("prompt") && !body["prompt"].is_null();
  const bool has_messages = body.contains("messages") && !body["messages"].is_null();
  const bool has_content = body.contains("content") && !body["content"].is_null();
  if (has_prompt + has_messages + has_content != 1) {
    return BadRequest(
        "Give exactly one of 'prompt' (text, vLLM), 'messages' (a chat, vLLM) or 'content' (text, "
        "llama.cpp)",
        "prompt");
  }
  if (has_content) return TokenizeLlamaCpp(body, v);
  std::vector<int32_t> ids;
  if (has_messages) {
    auto text = RenderMessages(body, v, now_unix);
    if (!text.ok()) return text.error();
    STET_API_TRY(CheckTextBytes(*text, v, "messages"));
    ids = v.chat.Tokenize(*text);
  } else {
    const Json& p = body["prompt"];
    if (!p.is_string())
      return BadRequest(std::string("'prompt' must be a string, not ") + TypeName(p), "prompt");
    bool add_special = true;
    STET_API_TRY(ReadBool(body, "add_special_tokens", &add_special));
    STET_API_TRY(CheckTextBytes(p.get_ref<const std::string&>(), v, "prompt"));
    ids = v.tok.Encode(p.get<std::string>(), add_special, /*parse_special=*/true);
  }
  bool strs = false;
  STET_API_TRY(ReadBool(body, "return_token_strs", &strs));
  if (strs) STET_API_TRY(CheckTokensReturned(ids.size(), v, "The answer with return_token_strs"));
  Json out = Json::object();
  out["count"] = ids.size();
  out["max_model_len"] = v.n_ctx;
  out["tokens"] = IdArray(ids);
  if (strs) {
    Json s = Json::array();
    for (int32_t id : ids) s.push_back(SanitizeUtf8(v.tok.TokenText(id)));
    out["token_strs"] = std::move(s);
  } else {
    out["token_strs"] = nullptr;
  }
  return out;
}

ApiOr<Json> DetokenizeBody(const Json& body, const TokenizerView& v) {
  STET_API_TRY(CheckModel(body, v.model));
  auto t = body.find("tokens");
  if (t == body.end() || t->is_null())
    return BadRequest("You must provide a tokens parameter.", "tokens");
  std::vector<int32_t> ids;
  if (t->is_array()) STET_API_TRY(CheckTokensReturned(t->size(), v, "'tokens'"));
  STET_API_TRY(ParseTokenIds(*t, "tokens", &ids));
  for (int32_t id : ids) {
    if (id < 0 || id >= v.tok.n_vocab()) {
      return BadRequest("'tokens' holds " + std::to_string(id) + ", outside the vocabulary [0, " +
                            std::to_string(v.tok.n_vocab()) + ")",
                        "tokens");
    }
  }
  const std::string text = SanitizeUtf8(v.tok.Decode(ids, /*render_special=*/true));
  Json out = Json::object();
  out["prompt"] = text;
  out["content"] = text;
  return out;
}

ApiOr<Json> ApplyTemplateBody(const Json& body, const TokenizerView& v,
                              std::optional<int64_t> now_unix) {
  STET_API_TRY(CheckModel(body, v.model));
  auto text = RenderMessages(body, v, now_unix);
  if (!text.ok()) return text.error();
  Json out = Json::object();
  out["prompt"] = std::move(*text);
  return out;
}

Json TokenizerInfo(const TokenizerView& v, const std::string& template_sha256) {
  const Tokenizer& t = v.tok;
  const VocabData& voc = t.vocab();
  const auto text = [&t](int32_t id) -> Json {
    return id >= 0 ? Json(SanitizeUtf8(t.TokenText(id))) : Json(nullptr);
  };
  const auto id_or_null = [](int32_t id) -> Json { return id >= 0 ? Json(id) : Json(nullptr); };
  Json j = Json::object();
  j["model"] = v.model.id;
  j["tokenizer_model"] = voc.model;  // "llama" (SentencePiece) or "gpt2" (byte-level BPE)
  j["pre_tokenizer"] = voc.pre;
  j["vocab_size"] = t.n_vocab();
  j["max_model_len"] = v.n_ctx;
  j["model_max_length"] = v.n_ctx;
  j["bos_token"] = text(t.bos());
  j["eos_token"] = text(t.eos());
  j["unk_token"] = text(t.unk());
  j["pad_token"] = text(t.pad());
  j["bos_token_id"] = id_or_null(t.bos());
  j["eos_token_id"] = id_or_null(t.eos());
  j["unk_token_id"] = id_or_null(t.unk());
  j["pad_token_id"] = id_or_null(t.pad());
  j["eot_token_id"] = id_or_null(t.eot());
  j["eog_token_ids"] = IdArray(t.eog_ids());
  j["add_bos_token"] = voc.add_bos;
  j["add_eos_token"] = voc.add_eos;
  j["add_space_prefix"] = voc.add_space_prefix;
  j["clean_up_tokenization_spaces"] = voc.clean_spaces;
  j["chat_template"] = v.chat.source();
  j["chat_template_sha256"] = template_sha256;
  j["chat_template_fallback"] = v.chat.is_fallback();
  j["chat_template_builtin"] = v.chat.Describe()["name"];
  return j;
}

}  // namespace stet::server
