// `stet probe`: is an OpenAI-compatible endpoint deterministic under load?
// Exit codes: 0 deterministic, 1 divergence found (text, or any logprob bit), 2 error
// (or a void probe).
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

CLI::App* AddProbeCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
