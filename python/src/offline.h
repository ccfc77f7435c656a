// The engine as the Python package drives it (stet._core), free of Python
// types: open a model as `stet serve` does, turn one prompt's parameters into
// a validated RequestParams (refusals name the field, as the server's 400
// does), run many requests at once in the engine (continuous batching) and
// collect their events. Invariant: everything here runs on the caller's or the
// engine's thread without the interpreter — the binding releases the GIL
// around every wait — and an engine callback only appends under a mutex.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"
#include "server/openai/chat_prompt.h"

namespace stet::python {

// LLM(...)'s options. Defaults are `stet serve`'s.
struct LlmOptions {
  std::string model;  // a GGUF path or a pulled model's name (`stet list`)
  int threads = 0;    // 0: every core
  int max_model_len = 4096;
  std::string kv_cache_dtype = "auto";  // auto (f16), f16, f32
  std::string numerics = "invariant";   // invariant or adaptive (rule R8)
  std::string isa = "auto";
  std::string speculative = "off";  // off, lookup, draft (with draft_model)
  int num_speculative_tokens = 4;
  std::string draft_model;
  int max_num_seqs = 64;
  int max_num_batched_tokens = 512;
  int chunk_size = 256;
  bool enable_prefix_caching = true;
  std::string chat_template;         // replaces the GGUF's tokenizer.chat_template (text)
  std::string chat_template_kwargs;  // JSON object: every chat's template variables ("": none)
  bool progress = false;             // load progress on stderr
};

// A refusal of a request or a chat: the field at fault (as the server's `param`) and why.
struct Refusal {
  std::string field;
  std::string message;
};

// One prompt's request as the Python SamplingParams spells it (vLLM's names).
struct RequestSpec {
  std::vector<int32_t> prompt;
  std::optional<int> max_tokens;  // absent: to the end of the context
  int min_tokens = 0;
  int n = 1;
  SamplingParams sampling;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  std::optional<int> logprobs;         // completion: the token and this many alternatives
  std::optional<int> prompt_logprobs;  // prompt: each token and this many alternatives
  std::optional<bool> speculative;
  std::shared_ptr<const Grammar> grammar;  // CompileStructured's
  bool logits_hash = false;
};

// What one choice produced, collected from its events.
struct ChoiceOut {
  std::vector<TokenOut> tokens;  // every sampled token, the one that ended the choice included
  std::string text;              // what the server's "text" holds
  FinishReason finish = FinishReason::kNone;
  bool end_marker = false;  // the last token ended the choice (end of generation or a stop id)
  std::string error;
};

struct RequestOut {
  uint64_t seed = 0;
  std::vector<ChoiceOut> choices;
  std::vector<TokenOut> prompt_tokens;  // with prompt_logprobs
  int cached_prompt_tokens = 0;
  int finished_choices = 0;
};

class Offline {
 public:
  static Result<std::shared_ptr<Offline>> Open(const LlmOptions& o);

  Engine& engine() { return *engine_; }
  const Tokenizer& tokenizer() const { return engine_->tokenizer(); }
  const server::ChatPrompt& chat() const { return *chat_; }
  const std::string& chat_template_source() const { return chat_->source(); }
  int n_ctx() const { return engine_->n_ctx(); }
  const std::string& model_path() const { return path_; }
  // The model's general.name (else the file stem): the server's model id.
  const std::string& model_id() const { return model_id_; }

  // Validated engine parameters, or the refusal naming the field.
  std::variant<RequestParams, Refusal> Build(const RequestSpec& spec) const;

  // The conversation rendered as `stet serve` renders it: messages and tools
  // normalized by the server's parser, the options (ChatPromptOptions:
  // `kwargs_json` a JSON object or "", the clock absent: now) checked by its
  // CheckChatPromptOptions; refusals name the field (e.g. "messages[1].role").
  std::variant<std::string, Refusal> RenderChat(const std::string& messages_json,
                                                const std::string& tools_json,
                                                bool add_generation_prompt,
                                                bool continue_final_message,
                                                const std::string& kwargs_json,
                                                std::optional<int64_t> clock) const;

 private:
  std::string path_, model_id_;
  std::shared_ptr<Engine> engine_;
  std::unique_ptr<server::ChatPrompt> chat_;
  friend class Batch;
  friend class StreamRun;
};

// Many requests in the engine at once; each event lands in its request's
// RequestOut. Callbacks hold the shared state, never the Batch, so dropping a
// Batch (or the interpreter unwinding) while the engine runs is safe.
class Batch {
 public:
  // Submits every request (none when one of them is refused at Submit: the
  // already submitted ones are cancelled and the refusal returned with its index).
  static std::variant<std::shared_ptr<Batch>, std::pair<size_t, Refusal>> Start(
      std::shared_ptr<Offline> llm, std::vector<RequestParams> params);
  ~Batch();

  // Waits up to `timeout_s` for a request to finish (no GIL held); returns
  // how many requests have finished in all.
  size_t Wait(double timeout_s);
  size_t size() const { return ids_.size(); }
  size_t finished() const;
  int64_t generated_tokens() const;
  // Cancels every request still running; their choices finish with "cancelled".
  void Cancel();
  // Valid once finished() == size().
  const RequestOut& result(size_t i) const;

 private:
  struct State;
  std::shared_ptr<Offline> llm_;
  std::shared_ptr<State> state_;
  std::vector<uint64_t> ids_;
};

// One request whose events are handed over as they come (LLM.stream).
class StreamRun {
 public:
  static std::variant<std::shared_ptr<StreamRun>, Refusal> Start(std::shared_ptr<Offline> llm,
                                                                 RequestParams params);
  ~StreamRun();
  // The events that arrived, waiting up to `timeout_s` for at least one;
  // empty when none came in time or everything was taken (done()).
  std::vector<RequestEvent> Take(double timeout_s);
  bool done() const;  // every choice finished and every event taken
  void Cancel();
  uint64_t seed() const { return seed_; }

 private:
  struct State;
  std::shared_ptr<Offline> llm_;
  std::shared_ptr<State> state_;
  uint64_t id_ = 0, seed_ = 0;
};

// The checks of Offline::Build that need no model (every range, not the token
// ids or the context): SamplingParams runs them when it is made.
std::optional<Refusal> CheckSpec(const RequestSpec& spec);

// response_format / grammar / choice / regex -> the compiled grammar the
// server would use, or a refusal naming the field ("structured_outputs.json", ...).
// `kind`: "json" (a JSON Schema as JSON text), "json_object", "grammar" (GBNF),
// "regex", "choice" (`choices`).
std::variant<std::shared_ptr<const Grammar>, Refusal> CompileStructured(
    const std::string& kind, const std::string& text, const std::vector<std::string>& choices);

}  // namespace stet::python
