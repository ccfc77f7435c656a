// `stet tokenize`: show how a model's tokenizer splits text.
#pragma once

#include <CLI/CLI.hpp>

namespace stet::tools {

CLI::App* AddTokenizeCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
