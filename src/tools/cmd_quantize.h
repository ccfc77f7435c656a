// `stet quantize`: re-encode a GGUF model's weights in another type.
#pragma once

#include <CLI/CLI.hpp>

namespace stet::tools {

CLI::App* AddQuantizeCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
