// `stet drift`: logprob fingerprints of a fixed prompt set, compared with a
// saved baseline or a second endpoint. Exit codes: 0 within the threshold (or
// capture only), 1 over the threshold, 2 error — for cron and CI.
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

CLI::App* AddDriftCommand(CLI::App& app, int* exit_code);
// `stet drift watch` and `stet drift report` (cmd_drift_watch.cc).
void AddDriftWatchCommands(CLI::App* drift, int* exit_code);

}  // namespace stet::tools
