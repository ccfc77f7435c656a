// `stet bench`: llama-bench-style speed measurement of the forward pass — prefill
// (ppN), single-sequence decode (tgN) and batched decode (tgN x B) — as a table or
// one JSON object (bench/run.py reads it).
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

CLI::App* AddBenchCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
