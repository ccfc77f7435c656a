// The `stet` command: thin subcommands over the engine. Exit codes: 0 ok,
// 1 the work failed (message on stderr), 2 bad command line.
#include <CLI/CLI.hpp>

#include "tools/cmd_bench.h"
#include "tools/cmd_fingerprint.h"
#include "tools/cmd_gguf_random.h"
#include "tools/cmd_pull.h"
#include "tools/cmd_quantize.h"
#include "tools/cmd_run.h"
#include "tools/cmd_serve.h"
#include "tools/cmd_tokenize.h"
#include "tools/common.h"
#include "tools/forensics/cmd_drift.h"
#include "tools/forensics/cmd_eval.h"
#include "tools/forensics/cmd_probe.h"
#include "tools/forensics/cmd_proxy.h"
#include "tools/forensics/cmd_record.h"
#include "tools/forensics/cmd_replay.h"

int main(int argc, char** argv) {
  CLI::App app{
      "stet — an LLM inference engine whose answers stand: the same request gives "
      "the same bytes, whatever else the machine is doing."};
  app.require_subcommand(1);
  int exit_code = stet::tools::kExitOk;
  stet::tools::AddRunCommand(app, &exit_code);
  stet::tools::AddTokenizeCommand(app, &exit_code);
  stet::tools::AddServeCommand(app, &exit_code);
  stet::tools::AddPullCommand(app, &exit_code);
  stet::tools::AddListCommand(app, &exit_code);
  stet::tools::AddFingerprintCommand(app, &exit_code);
  stet::tools::AddQuantizeCommand(app, &exit_code);
  stet::tools::AddBenchCommand(app, &exit_code);
  stet::tools::AddGgufRandomCommand(app, &exit_code);
  stet::tools::AddProbeCommand(app, &exit_code);
  stet::tools::AddEvalCommand(app, &exit_code);
  stet::tools::AddDriftCommand(app, &exit_code);
  stet::tools::AddReplayCommand(app, &exit_code);
  stet::tools::AddRecordCommand(app, &exit_code);
  stet::tools::AddProxyCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return stet::tools::kExitUsage;
  }
  return exit_code;
}
