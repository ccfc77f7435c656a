// An in-process `stet serve` on a free loopback port, for tools that ask a
// local model what it would answer (`stet replay --against stet -m FILE`).
// It is the real server and engine — the same code path, the same bytes as a
// separately started `stet serve -m FILE` with default options.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"

namespace stet::server {
class Server;
}

namespace stet::tools {

struct LocalServerOptions {
  std::string model_path;
  int threads = 0;   // 0: every core
  int n_ctx = 4096;  // as stet serve
  int max_seqs = 8;
};

class LocalServer {
 public:
  // Loads the model (progress on stderr) and starts answering on 127.0.0.1.
  static Result<std::unique_ptr<LocalServer>> Start(const LocalServerOptions& o);
  ~LocalServer();  // drains and stops

  const std::string& url() const { return url_; }           // http://127.0.0.1:PORT
  const std::string& model_name() const { return model_; }  // the served model's id
  const std::string& fingerprint() const { return fingerprint_; }

 private:
  LocalServer() = default;
  std::unique_ptr<server::Server> server_;
  std::string url_, model_, fingerprint_;
};

}  // namespace stet::tools
