// Prepare, the tool parser and the record: the steps every generation
// endpoint shares between parsing its body and submitting to the engine.
#include "server/pipeline.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "server/openai/request_parse.h"
#include "server/structured/structured_output.h"

namespace stet::server {

namespace {

// The conversation rendered by the chat template and tokenized: one prompt.
ApiOr<std::vector<int32_t>> Render(const ServeModel& m, const GenerationRequest& g,
                                   PreparedPrompts* p, bool keep_rendered) {
  ChatPromptOptions how = g.template_options;
  how.now_unix = p->clock_unix;
  if (auto e = CheckChatPromptOptions(how)) return *e;
  // With reasoning, the prompt's end says whether the answer starts inside a block.
  const bool keep = keep_rendered || m.reasoning;
  auto ids = m.chat->Build(g.messages, g.tools.tools, how, keep ? &p->rendered : nullptr,
                           m.max_prompt_bytes);
  if (ids.ok()) {
    if (m.reasoning) p->reasoning_open = EndsInsideReasoning(*m.reasoning, p->rendered);
    if (!keep_rendered) p->rendered.clear();
    return ids;
  }
  ApiError e = ids.error();
  if (e.param == "messages") e.param = g.prompt_param;  // /v1/responses names its input
  return e;
}

}  // namespace

std::optional<ApiError> CheckPromptBytes(const ServeModel& m, size_t bytes, const char* param) {
  if (bytes <= m.max_prompt_bytes) return std::nullopt;
  const int n_ctx = m.engine->n_ctx();
  return ContextLengthExceeded("This model's maximum context length is " + std::to_string(n_ctx) +
                                   " tokens, and no token of its vocabulary is longer than " +
                                   std::to_string(m.max_prompt_bytes / std::max(1, n_ctx)) +
                                   " bytes, so a prompt of " + std::to_string(bytes) +
                                   " bytes cannot fit; it was refused without tokenizing it.",
                               param);
}

ApiOr<PreparedPrompts> Prepare(const ServeModel& m, GenerationRequest& g, bool keep_rendered) {
  PreparedPrompts p;
  RequestParams& params = g.s.params;
  if (!g.tools.forced.empty()) {  // tool_choice "required" / named: calls in the template's format
    // (over a response format: that one applies to the text turns after the call)
    STET_API_TRY(ForceToolCalls(*m.tool_format, g.tools.tools,
                                g.tools.forced == "*" ? "" : g.tools.forced, g.tools.parallel,
                                &params));
  } else if (g.tools.parse && !g.text_schema.is_null()) {  // calls, or text in the format
    STET_API_TRY(
        ForceToolsOrText(*m.tool_format, g.tools.tools, g.tools.parallel, g.text_schema, &params));
  }
  if (g.templated()) {
    for (const std::string& stop : m.chat->extra_stops()) params.stop.push_back(stop);
    p.clock_unix = TemplateClock(g.clock);
  }
  // Cheap checks before expensive work: a prompt text too long for any
  // tokenization to fit the context is refused by its size.
  for (const PromptInput& in : g.prompts) {
    if (in.is_text) STET_API_TRY(CheckPromptBytes(m, in.text.size(), g.prompt_param));
  }
  const Tokenizer& tok = m.engine->tokenizer();
  const RequestLimits limits = m.engine->limits();
  const auto add = [&](std::vector<int32_t> ids) -> std::optional<ApiError> {
    auto rp = BuildParams(g.s, std::move(ids), limits, g.default_max_tokens, g.prompt_param);
    if (!rp.ok()) return rp.error();
    if (g.out.return_token_ids) p.prompt_ids.push_back(rp->prompt);
    p.params.push_back(std::move(*rp));
    return std::nullopt;
  };
  if (!g.messages.is_null()) {
    auto ids = Render(m, g, &p, keep_rendered);
    if (!ids.ok()) return ids.error();
    STET_API_TRY(add(std::move(*ids)));
    return p;
  }
  for (const PromptInput& in : g.prompts) {
    std::vector<int32_t> ids =
        in.is_text ? tok.Encode(in.text, /*add_special=*/true, /*parse_special=*/true) : in.ids;
    if (g.out.echo) p.echo_text.push_back(in.is_text ? in.text : tok.Decode(ids));
    STET_API_TRY(add(std::move(ids)));
  }
  return p;
}

PieceFn Piece(const ServeModel& m) {
  const Tokenizer* tok = &m.engine->tokenizer();
  return [tok](int32_t id) { return tok->TokenToPiece(id); };
}

PieceFn RawPiece(const ServeModel& m, const GenerationRequest& g) {
  if (!g.tools.parse) return nullptr;
  // Markers such as <|python_tag|> and [TOOL_CALLS] are control tokens the text leaves out.
  const Tokenizer* tok = &m.engine->tokenizer();
  return [tok](int32_t id) { return tok->TokenToPiece(id, /*render_special=*/true); };
}

namespace {

// How `g`'s answers are read; null when nothing is read from them.
std::shared_ptr<const AnswerSyntax> Syntax(const ServeModel& m, const GenerationRequest& g,
                                           const PreparedPrompts& p) {
  const bool reasoning = m.reasoning && g.templated();
  if (!g.tools.parse && !reasoning) return nullptr;
  auto s = std::make_shared<AnswerSyntax>();
  if (g.tools.parse) {
    s->format = m.tool_format;
    s->tools = g.tools.tools;
    s->seed = *g.s.params.sampling.seed;
  }
  if (reasoning) {
    s->reasoning = *m.reasoning;
    s->reasoning->starts_inside = p.reasoning_open;
  }
  return s;
}

// The tokens up to the one that ends the reasoning block (all, when none does).
int64_t ReasoningTokens(const ReasoningSyntax& r, const std::vector<TokenOut>& tokens) {
  std::string text;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const size_t from = text.size() > r.close.size() ? text.size() - r.close.size() : 0;
    text += tokens[i].text;
    if (text.find(r.close, from) != std::string::npos) return static_cast<int64_t>(i + 1);
  }
  return static_cast<int64_t>(tokens.size());
}

}  // namespace

ToolParseFn ToolParser(const ServeModel& m, const GenerationRequest& g, const PreparedPrompts& p) {
  return AnswerParser(Syntax(m, g, p));
}

SafePartsFn SafeParser(const ServeModel& m, const GenerationRequest& g, const PreparedPrompts& p) {
  return AnswerPrefix(Syntax(m, g, p));
}

ToolParseFn AnswerParser(std::shared_ptr<const AnswerSyntax> s) {
  if (!s) return nullptr;
  return [s](int index, const ChoiceResult& c) {
    ParsedAnswer a = SplitAnswer(*s, s->format ? c.raw : c.text, c.text, index);
    if (a.reasoning) a.reasoning_tokens = ReasoningTokens(*s->reasoning, c.tokens);
    return a;
  };
}

SafePartsFn AnswerPrefix(std::shared_ptr<const AnswerSyntax> s) {
  if (!s) return nullptr;
  return [s](const ChoiceResult& c) { return SafePrefix(*s, s->format ? c.raw : c.text, c.text); };
}

RecordFn MakeRecordFn(const ServeModel& m, const GenerationRequest& g, PreparedPrompts& p,
                      const RecordOrigin& origin) {
  auto c = std::make_shared<RecordContext>();
  c->request = origin.body;
  c->id = origin.id;
  c->endpoint = WirePath(g.api);
  c->received_at = origin.received_at;
  c->seed = *g.s.params.sampling.seed;
  c->seed_generated = g.seed_generated;
  c->model = m.model_id;
  c->fingerprint = m.engine->fingerprint();
  c->fingerprint_descriptor = m.engine->fingerprint_descriptor();
  c->model_sha256 = m.engine->model_sha256();
  if (g.templated()) {
    c->chat = true;
    c->clock_unix = p.clock_unix;
    c->clock_from_client = g.clock.has_value();
    c->template_sha256 = m.template_sha256;
    c->template_fallback = m.chat->is_fallback();
    c->rendered_prompt = std::move(p.rendered);
  }
  c->params = p.params;
  return [c](const std::vector<ChoiceResult>& choices, const UsageCounts& u) {
    return BuildRecord(*c, choices, u);
  };
}

}  // namespace stet::server
