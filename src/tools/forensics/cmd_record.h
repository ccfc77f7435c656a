// `stet record export|import`: records of `stet serve --record` as JSONL
// cassettes, and the recorder `stet serve --record FILE.db` plugs into the
// server (the tools layer is where the server meets the forensics store).
#pragma once
#include <memory>
#include <string>

#include "base/status.h"
#include "server/recorder.h"

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

CLI::App* AddRecordCommand(CLI::App& app, int* exit_code);

// Opens (creating when missing) the SQLite record store at `path` for the server.
Result<std::shared_ptr<server::RequestRecorder>> OpenRequestRecorder(const std::string& path);

}  // namespace stet::tools
