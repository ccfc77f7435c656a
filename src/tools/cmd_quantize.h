// `stet quantize`: re-encode a GGUF model's weights in another type.
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

CLI::App* AddQuantizeCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
