// The event dispatch every format shares, and the format of each wire shape.
#include "server/openai/wire_format.h"

#include "server/openai/chat_format.h"
#include "server/openai/completions_format.h"
#include "server/openai/responses_format.h"

namespace stet::server {

std::string WireFormat::Step(const StreamStep& s) {
  switch (s.ev.kind) {
    case RequestEvent::Kind::kPromptScored:
      return PromptScored(s);
    case RequestEvent::Kind::kToken:
      return Token(s);
    case RequestEvent::Kind::kFinished:
      return Finished(s);
  }
  return "";
}

std::unique_ptr<WireFormat> MakeWireFormat(const GenerationRequest& g, const PreparedPrompts& p,
                                           ResponseMeta meta, PieceFn piece, ToolParseFn tools,
                                           SafePartsFn safe) {
  FormatContext c{std::move(meta), g.s.params.n,     g.s.include_usage, g.out,
                  p.prompt_ids,    std::move(piece), std::move(tools),  std::move(safe)};
  switch (g.api) {
    case WireApi::kCompletions:
      return std::make_unique<CompletionsFormat>(std::move(c), p.echo_text, p.params.size());
    case WireApi::kChat:
      return std::make_unique<ChatFormat>(std::move(c));
    case WireApi::kResponses:
      return std::make_unique<ResponsesFormat>(std::move(c), g);
  }
  return nullptr;
}

const char* WirePath(WireApi api) {
  static constexpr const char* kPaths[] = {"/v1/completions", "/v1/chat/completions",
                                           "/v1/responses"};
  return kPaths[static_cast<int>(api)];
}

}  // namespace stet::server
