#include "tools/common.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/text_lines.h"
#include "tokenizer/vocab.h"

namespace stet::tools {

std::string DefaultModelPath() {
  if (const char* env = std::getenv("STET_MODEL")) return env;
  const char* cache = std::getenv("STET_MODEL_CACHE");
  if (cache) return std::string(cache) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/stet/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

Result<std::unique_ptr<Tokenizer>> LoadTokenizerOnly(const std::string& path) {
  STET_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::Open(path));
  STET_ASSIGN_OR_RETURN(VocabData vocab, VocabFromGguf(*file));
  return Tokenizer::Create(std::move(vocab));
}

namespace {

// " (or STET_MAX_ISA=X hides it)" when the environment caps what the CPU reports.
std::string CapNote() {
  const char* cap = MaxIsaCap();
  return cap != nullptr ? std::string(" (or STET_MAX_ISA=") + cap + " hides it)" : "";
}

}  // namespace

Result<Isa> ParseIsa(const std::string& name) {
  if (name == "auto") return Isa::kAuto;
  if (name == "scalar") return Isa::kScalar;
  if (name == "avx2") {
    if (!CpuHasAvx2Fma()) return Unimplemented("this CPU lacks AVX2+FMA+F16C" + CapNote());
    return Isa::kAvx2;
  }
  if (name == "avx512") {
    if (!CpuHasAvx512()) return Unimplemented("this CPU lacks AVX-512 F/BW/DQ/VL/VNNI" + CapNote());
    return Isa::kAvx512;
  }
  if (name == "neon") {
    if (!CpuHasNeon()) return Unimplemented("this CPU lacks NEON (not aarch64)");
    return Isa::kNeon;
  }
  return InvalidArgument("unknown ISA path '" + name +
                         "' (use auto, scalar, avx2, avx512 or neon)");
}

namespace {

std::string NumericsWanted(const std::string& numerics) {
  return "must be invariant, fast, precise or adaptive, not '" + numerics + "'";
}

std::string KvTypeWanted(const std::string& kv) {
  return "must be f16, f32 or auto, not '" + kv + "'";
}

constexpr const char* kNumericsHelp =
    "invariant (default: batch-invariant; int8 activations refined by an int8 correction, "
    "within ~1e-3 nats of float64), fast (one int8 pass: faster, llama.cpp's distance from "
    "float64), precise (float activations over exactly dequantized weights, f32 KV: float64's "
    "log-probabilities to ~1e-5) or adaptive (batch-variant, for comparison); the fingerprint "
    "names the mode";
constexpr const char* kKvTypeHelp =
    "KV cache storage: f16, f32 or auto (f32 under --numerics precise, else f16); part of the "
    "fingerprint";

}  // namespace

Result<NumericsChoice> ParseNumericsChoice(const std::string& numerics, const std::string& kv) {
  NumericsChoice c;
  auto mode = NumericsFromName(numerics);
  if (!mode) return InvalidArgument("--numerics " + NumericsWanted(numerics));
  c.mode = *mode;
  if (kv == "f16" || (kv == "auto" && c.mode != NumericsMode::kPrecise)) {
    c.kv_type = DType::kF16;
  } else if (kv == "f32" || kv == "auto") {
    c.kv_type = DType::kF32;
  } else {
    return InvalidArgument("--kv-type " + KvTypeWanted(kv));
  }
  return c;
}

CLI::App* AddCommand(CLI::App& parent, int* exit_code, const std::string& name,
                     const std::string& help, std::function<int()> run) {
  CLI::App* cmd = parent.add_subcommand(name, help);
  cmd->callback([cmd, exit_code, run = std::move(run)] {
    if (cmd->get_subcommands().empty()) *exit_code = run();
  });
  return cmd;
}

void AddModelOption(CLI::App* cmd, std::string* model, const char* help) {
  *model = DefaultModelPath();
  cmd->add_option("-m,--model", *model, help)->capture_default_str();
}

void AddNumericsOptions(CLI::App* cmd, std::string* numerics, std::string* kv_type) {
  cmd->add_option("--numerics", *numerics, kNumericsHelp)
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) { return NumericsFromName(v) ? std::string() : NumericsWanted(v); },
          "{invariant,fast,precise,adaptive}"));
  cmd->add_option("--kv-type", *kv_type, kKvTypeHelp)
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) {
            return v == "f16" || v == "f32" || v == "auto" ? std::string() : KvTypeWanted(v);
          },
          "{f16,f32,auto}"));
}

void AddListenOptions(CLI::App* cmd, std::string* host, int* port) {
  cmd->add_option("--host", *host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", *port, "Port to listen on (0: any free port, printed on stderr)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
}

int ThreadsOrAllCores(int threads) {
  return threads > 0 ? threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Result<std::string> ReadWholeFile(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return IoError("cannot read " + what + " '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int ReportError(const Status& s) {
  std::fprintf(stderr, "stet: error: %s\n", s.ToString().c_str());
  return kExitError;
}

namespace {}  // namespace

Result<std::vector<std::string>> GatherApiKeys(const std::vector<std::string>& flag_keys,
                                               const std::string& key_file, const char* env_name) {
  std::vector<std::string> keys = flag_keys;
  if (!key_file.empty()) {
    std::ifstream in(key_file);
    if (!in) return InvalidArgument("--api-key-file " + key_file + ": cannot be read");
    const size_t before = keys.size();
    std::string line;
    while (std::getline(in, line)) {
      line = Trim(line);
      if (!line.empty() && line[0] != '#') keys.push_back(line);
    }
    if (keys.size() == before)
      return InvalidArgument("--api-key-file " + key_file + ": names no key");
  }
  if (const char* env = std::getenv(env_name); env && *env) {
    std::stringstream ss(env);
    std::string k;
    while (std::getline(ss, k, ',')) {
      k = Trim(k);
      if (!k.empty()) keys.push_back(k);
    }
  }
  return keys;
}

int64_t ParseDurationSeconds(const std::string& s) {
  if (s.size() < 2) return -1;
  const std::string num = s.substr(0, s.size() - 1);
  if (num.find_first_not_of("0123456789") != std::string::npos || num.size() > 9) return -1;
  const int64_t n = std::stoll(num);
  switch (s.back()) {
    case 'd':
      return n * 86400;
    case 'h':
      return n * 3600;
    case 'm':
      return n * 60;
    case 's':
      return n;
    default:
      return -1;
  }
}

void BoundMallocArenas() {
#ifdef __GLIBC__
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 4);
#endif
}

struct ExitWatchdog::State {
  std::mutex mu;
  std::condition_variable cv;
  bool armed = false;
};

ExitWatchdog::ExitWatchdog(int seconds, int code, std::string what)
    : state_(std::make_shared<State>()) {
  std::thread([st = state_, seconds, code, what = std::move(what)] {
    {
      std::unique_lock<std::mutex> lock(st->mu);
      st->cv.wait(lock, [&] { return st->armed; });
    }
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    if (!what.empty()) std::fprintf(stderr, "%s\n", what.c_str());
    std::fflush(stderr);
    std::_Exit(code);
  }).detach();
}

void ExitWatchdog::Arm() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->armed = true;
  }
  state_->cv.notify_all();
}

}  // namespace stet::tools
