// LocalServer: Engine::Open + server::Server on 127.0.0.1:0, configured as
// `stet serve` is by default (its EngineOptions and ServerOptions defaults).
#include "tools/local_server.h"

#include <utility>

#include "engine/engine.h"
#include "server/server.h"
#include "tools/common.h"

namespace stet::tools {

Result<std::unique_ptr<LocalServer>> LocalServer::Start(const LocalServerOptions& o) {
  EngineOptions eo;
  eo.n_ctx = o.n_ctx;
  eo.max_seqs = o.max_seqs;
  eo.n_threads = ThreadsOrAllCores(o.threads);
  auto engine = Engine::Open(o.model_path, eo, /*progress=*/true);
  if (!engine.ok()) return engine.status();
  server::ModelInfo info = server::ModelInfoOf(o.model_path, **engine);

  server::ServerOptions so;
  so.host = "127.0.0.1";
  so.port = 0;
  so.log_requests = false;
  auto srv = server::Server::Start(so);
  if (!srv.ok()) return srv.status();

  std::unique_ptr<LocalServer> local(new LocalServer());
  local->fingerprint_ = (*engine)->fingerprint();
  local->model_ = info.names.id;
  local->url_ = "http://127.0.0.1:" + std::to_string((*srv)->port());
  if (Status st = (*srv)->Attach(std::move(*engine), std::move(info)); !st.ok()) return st;
  local->server_ = std::move(*srv);
  return local;
}

LocalServer::~LocalServer() {
  if (server_ != nullptr) {
    server_->Shutdown();
    server_->Wait();
  }
}

}  // namespace stet::tools
