// `stet gguf-random`: write a random-weight GGUF with a real model's exact shape
// (model/random_model.h does the work), the speed-test models of bench/.
#pragma once

#include <CLI/CLI.hpp>

namespace stet::tools {

CLI::App* AddGgufRandomCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
