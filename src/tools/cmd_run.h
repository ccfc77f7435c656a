// `stet run`: generate text from a prompt with one sequence.
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

// Registers the subcommand; the returned callback runs it after parsing.
CLI::App* AddRunCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
