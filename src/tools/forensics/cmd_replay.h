// `stet replay FILE.db --endpoint URL`: re-executes recorded requests and
// proves bitwise identity or shows where each forks. Exit codes: 0 all
// identical, 1 a divergence, 2 error or refusal (fingerprint changed).
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

CLI::App* AddReplayCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
