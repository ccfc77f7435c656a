// `stet tokenize`: show how a model's tokenizer splits text.
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

CLI::App* AddTokenizeCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
