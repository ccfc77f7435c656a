// One wire shape's answer behind one interface: the non-streamed body of the
// finished choices, and the stream — what goes first, a piece per engine
// event, what goes last. /v1/completions, /v1/chat/completions and
// /v1/responses are one WireFormat each (completions_format.h,
// chat_format.h, responses_format.h). Invariants: a stream's pieces fold into
// the non-streamed body (texts concatenate to its texts, calls equal its
// calls); the choices a format reads are the collector's (server/job.h),
// folded once, never re-accumulated here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/generation.h"
#include "server/openai/response.h"

namespace stet::server {

// One engine event, as a format sees it.
struct StreamStep {
  int index = 0;   // the choice (prompt * n + choice)
  int prompt = 0;  // its prompt
  const RequestEvent& ev;
  const TokenOut* shown;       // kToken: the token, when it belongs in logprobs (no end marker)
  const ChoiceResult& choice;  // the choice so far, this event folded in
};

// What every format knows of its request.
struct FormatContext {
  ResponseMeta meta;
  int n = 1;  // choices per prompt
  bool include_usage = false;
  OutputOptions out;
  std::vector<std::vector<int32_t>> prompt_ids;  // per prompt, with out.return_token_ids
  PieceFn piece;
  ToolParseFn tools;  // null unless the request reads tool calls or reasoning
  // With `tools`: the parts certain while streaming; null holds every part
  // back until the choice is finished.
  SafePartsFn safe;
};

class WireFormat {
 public:
  virtual ~WireFormat() = default;
  // The non-streamed answer.
  virtual Json Body(const std::vector<ChoiceResult>& choices, const UsageCounts& usage) = 0;
  // The stream's first events.
  virtual std::string Begin() = 0;
  // The events for one engine event ("" when it has nothing to send).
  std::string Step(const StreamStep& s);
  // The last events, once every choice finished: the usage chunk (chat,
  // completions; "" unless asked) or the response's final events (Responses).
  virtual std::string End(const std::vector<ChoiceResult>& choices, const UsageCounts& usage) = 0;
  // Chat and completions streams end with "data: [DONE]"; the Responses API's does not.
  virtual bool done_marker() const { return true; }

 protected:
  virtual std::string PromptScored(const StreamStep&) { return ""; }
  virtual std::string Token(const StreamStep& s) = 0;
  virtual std::string Finished(const StreamStep& s) = 0;
};

// The format `g.api` names, for the prompts `p` made of `g`. `tools`: the
// parts of an answer (null unless it reads calls or reasoning); `safe`:
// what of them is certain while it streams.
std::unique_ptr<WireFormat> MakeWireFormat(const GenerationRequest& g, const PreparedPrompts& p,
                                           ResponseMeta meta, PieceFn piece, ToolParseFn tools,
                                           SafePartsFn safe = nullptr);

}  // namespace stet::server
