// `stet fingerprint`: the system_fingerprint a model + settings produce (R9).
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

CLI::App* AddFingerprintCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
