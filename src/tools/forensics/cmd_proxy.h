// `stet proxy`: the recording reverse proxy (src/forensics/proxy/proxy.h).
#pragma once

#include <CLI/CLI.hpp>

namespace stet::tools {

CLI::App* AddProxyCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
