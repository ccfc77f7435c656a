// `stet gguf-random`: write a random-weight GGUF with a real model's exact shape
// (model/random_model.h does the work), the speed-test models of bench/.
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

CLI::App* AddGgufRandomCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
