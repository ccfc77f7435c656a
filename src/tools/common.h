// Shared pieces of the `stet` subcommands: resolving the model path (default:
// SmolLM2-135M-Instruct in the setup cache), loading model + tokenizer with
// progress on stderr, and turning a Status into a message and exit code.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/status.h"
#include "engine/engine.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/model_catalog.h"

namespace CLI {
class App;
}  // namespace CLI

namespace stet::tools {

// Exit codes scripts can rely on.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;  // the work failed (bad model file, prompt too long, ...)
constexpr int kExitUsage = 2;  // bad command line

std::string
DefaultModelPath();  // $STET_MODEL, else ~/.cache/stet/models/SmolLM2-135M-Instruct.Q4_1.gguf

using Loaded = LoadedModel;  // engine/engine.h: LoadModelAndTokenizer
Result<std::unique_ptr<Tokenizer>> LoadTokenizerOnly(const std::string& path);

// "auto" | "scalar" | "avx2" | "avx512" | "neon" -> Isa (auto: Isa::kAuto, kernels chosen
// by measurement at load), erroring for a path this CPU cannot run.
Result<Isa> ParseIsa(const std::string& name);

// --numerics and --kv-type, which together decide the bits (and the fingerprint).
// kv "auto": f32 under --numerics precise (its promise needs it), else f16.
struct NumericsChoice {
  NumericsMode mode = NumericsMode::kInvariant;
  DType kv_type = DType::kF16;
};
Result<NumericsChoice> ParseNumericsChoice(const std::string& numerics, const std::string& kv);
// The wiring every subcommand shares: declares `name` under `parent` and, when the command
// line picks it and none of its own subcommands took over, sets *exit_code to run() once
// CLI11 has filled the options. Each command then states only its own options.
CLI::App* AddCommand(CLI::App& parent, int* exit_code, const std::string& name,
                     const std::string& help, std::function<int()> run);

// The same for a command whose options fill one Args: declare(cmd, &args) states its
// description and options, and run(args) gives the exit code.
template <typename Args, typename Run>
CLI::App* AddCommand(CLI::App& parent, int* exit_code, const std::string& name,
                     void (*declare)(CLI::App*, Args*), Run run) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = AddCommand(parent, exit_code, name, "", [args, run] { return run(*args); });
  declare(cmd, args.get());
  return cmd;
}

// The run of a subcommand that loads models: run(args) once ResolveModelsOrReport has
// resolved args.model (and args.draft_model, where Args has one); else kExitError.
template <typename Args>
auto WithModels(int (*run)(const Args&)) {
  return [run](Args& a) {
    std::string* draft = nullptr;
    if constexpr (requires { a.draft_model; }) draft = &a.draft_model;
    return ResolveModelsOrReport(&a.model, draft) ? run(a) : kExitError;
  };
}

// Declares -m,--model into *model, its default DefaultModelPath() (shown in --help): every
// subcommand that loads the setup model when none is named.
void AddModelOption(CLI::App* cmd, std::string* model,
                    const char* help = "GGUF model file, or a pulled model name (stet list)");

// Declares --numerics and --kv-type on `cmd` (defaults: invariant, auto), both checked at
// parse time with ParseNumericsChoice's wording, so every subcommand names and refuses the
// same values the same way (exit 2).
void AddNumericsOptions(CLI::App* cmd, std::string* numerics, std::string* kv_type);

// Declares --host and --port (0: any free port) for the commands that listen: serve, proxy.
void AddListenOptions(CLI::App* cmd, std::string* host, int* port);

// --threads: the value when positive, else every core (at least one).
int ThreadsOrAllCores(int threads);
// A whole file's bytes; IoError "cannot read <what> '<path>'" when it cannot be read.
Result<std::string> ReadWholeFile(const std::string& path, const std::string& what);

int ReportError(const Status& s);  // prints "stet: error: ..." and returns kExitError

// The API keys a server accepts: `flag_keys` (--api-key), then each line of
// `key_file` (--api-key-file; blank lines and '#' comments skipped), then the
// comma-separated keys in the environment variable `env_name`, so a key need
// not appear on the command line (/proc/PID/cmdline). An unreadable file, or
// one that names no key, is an error.
Result<std::vector<std::string>> GatherApiKeys(const std::vector<std::string>& flag_keys,
                                               const std::string& key_file, const char* env_name);

// Long-running servers: at most 4 malloc arenas (glibc makes up to 8 per core,
// each reserving 64 MiB of address space the first time a thread allocates),
// so under an address-space limit (prlimit --as) memory freed by one request
// serves the next instead of sitting in another thread's arena. A
// MALLOC_ARENA_MAX in the environment wins. Call before starting threads.
void BoundMallocArenas();

// The last resort of a shutdown: once Arm()ed, the process exits with `code`
// after `seconds` (printing `what`) should the drain not end. Its thread is made
// at construction, at start: a thread made at shutdown may not be granted
// under a memory limit (std::system_error, then std::terminate).
class ExitWatchdog {
 public:
  ExitWatchdog(int seconds, int code, std::string what);
  void Arm();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// "30d", "12h", "90m", "3600s" -> seconds ("0s": 0); -1 when malformed.
int64_t ParseDurationSeconds(const std::string& s);

}  // namespace stet::tools
