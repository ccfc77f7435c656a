// `stet proxy`: the recording reverse proxy (src/forensics/proxy/proxy.h).
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

CLI::App* AddProxyCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
