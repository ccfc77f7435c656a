// The `stet` command: thin subcommands over the engine. Exit codes: 0 ok,
// 1 the work failed (message on stderr), 2 bad command line.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "dist/mpi_world.h"
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

namespace {

// The subcommands that split a model across the ranks of mpirun -np N.
bool SplitsAcrossRanks(int argc, char** argv) {
  if (argc < 2) return false;
  const std::string cmd = argv[1];
  return cmd == "run" || cmd == "serve" || cmd == "bench";
}

int Main(int argc, char** argv);

}  // namespace

// Under mpirun -np N > 1 (tensor parallelism, src/dist): rank 0 runs the
// command, every other rank serves rank 0's forward passes until it quits.
int main(int argc, char** argv) {
  auto world = stet::dist::JoinWorld(&argc, &argv);
  if (!world.ok()) {
    std::fprintf(stderr, "stet: error: %s\n", world.status().message().c_str());
    return stet::tools::kExitError;
  }
  // A rank's address space: ~1/N of the weights and little else (prlimit --as).
  if (*world != nullptr) stet::tools::BoundMallocArenas();
  if (*world != nullptr && (*world)->rank() > 0) return stet::dist::WorkerMain();
  if (*world != nullptr && !SplitsAcrossRanks(argc, argv)) {
    std::fprintf(stderr,
                 "stet: error: under mpirun with %d ranks only run, serve and bench run (they "
                 "split the model across the ranks); start other commands as one process\n",
                 (*world)->size());
    return stet::dist::LeaveWorld(stet::tools::kExitUsage);
  }
  return stet::dist::LeaveWorld(Main(argc, argv));
}

namespace {

int Main(int argc, char** argv) {
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

}  // namespace
