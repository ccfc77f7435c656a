// `stet serve`: the OpenAI-compatible HTTP server (docs/api.md).
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

// Registers the subcommand; the returned callback runs it after parsing.
CLI::App* AddServeCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
