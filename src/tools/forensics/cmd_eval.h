// `stet eval` (repeated-run evaluation with confidence intervals) and
// `stet eval compare A.json B.json` (paired A/B). Exit codes: 0 done, 2 error
// (including any failed request; results are still written).
#pragma once

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

CLI::App* AddEvalCommand(CLI::App& app, int* exit_code);

}  // namespace stet::tools
