// The endpoint handlers: /v1/completions and /v1/chat/completions are their
// wire shape's parser handed to the one generation path (Serve, serve.cc),
// and the small GET endpoints.
#include <algorithm>

#include "http/json_fields.h"
#include "server/openai/request_parse.h"
#include "server/server_internal.h"

namespace stet::server {

using httplib::Request;
using httplib::Response;

void Server::Impl::HandleCompletions(const Request& req, Response& res) {
  Serve(req, res, [this](const Json& b) { return ParseCompletionRequest(b, info.names); });
}

void Server::Impl::HandleChat(const Request& req, Response& res) {
  Serve(req, res, [this](const Json& b) { return ParseChatRequest(b, info.names); });
}

Json Server::Impl::ModelJson() const {
  Json m = Json::object();
  m["id"] = info.names.id;
  m["object"] = "model";
  m["created"] = created;
  m["owned_by"] = "stet";
  m["max_model_len"] = engine->n_ctx();
  m["system_fingerprint"] = engine->fingerprint();
  m["chat_template"] = chat->Describe();
  return m;
}

void Server::Impl::HandleModels(const Request& req, Response& res) {
  if (req.matches.size() > 1) {
    const std::string name = req.matches[1];
    if (!info.names.Matches(name)) return SendError(res, ModelNotFound(name));
    Json m = ModelJson();
    const auto& aliases = info.names.aliases;
    if (std::find(aliases.begin(), aliases.end(), name) != aliases.end()) m["id"] = name;
    return SendJson(res, 200, m);
  }
  Json list = Json::object();
  list["object"] = "list";
  list["data"] = Json::array({ModelJson()});
  for (const std::string& alias : info.names.aliases) {  // the same model under each name
    if (alias == info.names.id) continue;
    Json m = ModelJson();
    m["id"] = alias;
    list["data"].push_back(std::move(m));
  }
  SendJson(res, 200, list);
}

void Server::Impl::HandleHealth(const Request&, Response& res) {
  Json j = Json::object();
  // A broken tensor-parallel group: nothing can be computed any more.
  if (ready) {
    if (Status h = engine->health(); !h.ok()) {
      j["status"] = "failed";
      j["error"] = h.message();
      return SendJson(res, 503, j);
    }
  }
  if (draining) {
    j["status"] = "draining";
    return SendJson(res, 503, j);
  }
  if (!ready) {
    j["status"] = "loading";
    res.set_header("Retry-After", "1");
    return SendJson(res, 503, j);
  }
  j["status"] = "ok";
  if (engine->tp_ranks() > 1) j["tensor_parallel_ranks"] = engine->tp_ranks();
  SendJson(res, 200, j);
}

void Server::Impl::HandleMetrics(const Request&, Response& res) {
  ServerGauges g;
  g.ready = ready;
  g.draining = draining;
  {
    std::lock_guard<std::mutex> lock(jobs_mu);
    g.requests_in_flight = admitted;
  }
  std::optional<EngineStats> stats;
  if (ready) {
    stats = engine->stats();
    g.model_id = info.names.id;
    g.fingerprint = engine->fingerprint();
  }
  res.status = 200;
  res.set_content(metrics.Render(g, stats ? &*stats : nullptr),
                  "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace stet::server
