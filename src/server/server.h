// The OpenAI-compatible HTTP server behind `stet serve`: /v1/completions,
// /v1/chat/completions, /v1/responses (SSE streaming), /v1/models, the
// tokenizer endpoints (/tokenize, /detokenize, /tokenizer_info,
// /apply-template), /health, /metrics.
// Invariants: the engine thread is never blocked by HTTP (its callback only
// appends to a per-request queue that an HTTP worker drains); every admitted
// request is either answered or cancelled in the engine (a client that goes
// away mid-stream frees its KV); Shutdown stops accepting connections and
// lets in-flight requests finish before it returns; no client holds a worker
// past the header and body deadlines, nor the shutdown past the drain timeout.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"
#include "server/openai/request_parse.h"
#include "server/recorder.h"
#include "template/chat_template.h"

namespace stet::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                    // 0: any free port (see Server::port())
  std::vector<std::string> api_keys;  // empty: no authentication; an empty key is refused
  int max_queue = 64;                 // generation requests admitted at once; more get 429
  int http_threads = 0;  // requests served at once (besides GET/HEAD); 0: max_queue + 16
  size_t max_body_bytes = 16u << 20;  // larger bodies get 413, however they are framed
  int keep_alive_s = 2;               // idle keep-alive connections close after this
  int header_timeout_s = 10;          // request line and headers must arrive within this (else 408)
  int body_timeout_s = 60;  // the body must arrive within this after the headers (else 408)
  // After 5 s a body must have averaged this many bytes/s (else 408); 0: no minimum.
  size_t body_min_rate = 1024;
  // Connections open at once from one non-loopback client address (more: 503); 0: no cap.
  int max_connections_per_client = 256;
  int read_timeout_s = 10;    // longest wait for one read or write to make progress
  int drain_timeout_s = 120;  // Shutdown cancels what is still running after this
  // Host header names accepted besides localhost, 127.0.0.1 and [::1] ("*": any).
  // Empty: only those when bound to a loopback address, any Host otherwise.
  std::vector<std::string> allowed_hosts;
  bool metrics_public = false;  // with api_keys: /metrics answers without a key too
  // --cors-origin: browser origins ("https://app.example.com", or "*") whose
  // pages may call the API (CORS headers, preflight answered); empty: none.
  std::vector<std::string> cors_origins;
  bool log_requests = true;  // one JSON line per request on stderr
  // --record: every answered generation request is stored here before its
  // answer is written (server/recorder.h); null: nothing is recorded.
  std::shared_ptr<RequestRecorder> recorder;
};

// What Server::Start refuses: out-of-range limits, an empty API key, a bad
// --allowed-hosts entry. Callers check first to report a usage error.
Status CheckServerOptions(const ServerOptions& opts);

// What the server needs to know about the model besides the engine.
struct ModelInfo {
  ServedModel names;
  std::string chat_template;  // tokenizer.chat_template; empty: the family's built-in
  // general.architecture and general.name/basename: which built-in a file
  // without a template gets (template/builtin_templates.h).
  std::string architecture;
  std::string model_name;
  // Every chat render's budget; Attach fails when the template breaks it on a
  // small test conversation (ChatPrompt::LoadCheck).
  TemplateLimits template_limits;
  // --chat-template-kwargs: template variables every request gets (its own
  // chat_template_kwargs override them key by key); null or an object.
  nlohmann::ordered_json chat_template_kwargs;
  // --reasoning-format: "auto" splits a <think>…</think> block out of chat
  // answers (reasoning_content, reasoning items) when the template or the
  // vocabulary has the tags; "deepseek" always; "none" never (it stays inline).
  std::string reasoning_format = "auto";
};

class Server {
 public:
  // Binds and starts answering (/health says 503 "loading" until Attach).
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& opts);
  ~Server();  // Shutdown() if still running

  int port() const;
  // Hands over the engine; from now on requests are served. Fails (and serves
  // nothing) when the chat template does not parse or fails its load check.
  Status Attach(std::unique_ptr<Engine> engine, ModelInfo info);
  bool ready() const;
  // After Attach, when the file had no chat template: the built-in in use
  // ("gemma", ...) and why it was chosen; empty otherwise.
  std::string chat_template_builtin() const;
  std::string chat_template_reason() const;

  // Stops accepting connections (and closes the idle ones), waits for in-flight
  // requests (cancelling them after drain_timeout_s), then closes every
  // connection whatever its client is doing. True when nothing had to be
  // cancelled. Idempotent.
  bool Shutdown();
  // Blocks until Shutdown has closed every connection.
  void Wait();

  // Defined in server_internal.h; named here so the route table (routes.h) can point at its
  // handlers.
  struct Impl;

 private:
  Server() = default;
  std::unique_ptr<Impl> impl_;
};

// The served model's names: general.name from the GGUF (else the file stem), the file name and
// stem.
ServedModel ModelNames(const std::string& path, const std::string& general_name);
// What the GGUF at `path`, loaded by `engine`, says about itself: its names and
// tokenizer.chat_template (empty: the ChatML fallback); default template limits.
ModelInfo ModelInfoOf(const std::string& path, const Engine& engine);

}  // namespace stet::server
