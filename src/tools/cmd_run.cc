#include "tools/cmd_run.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "dist/mpi_world.h"
#include "engine/engine.h"
#include "tools/common.h"
#include "tools/model_catalog.h"
#include "tools/range_option.h"

namespace stet::tools {

namespace {

struct RunArgs {
  std::string model;
  std::string prompt;
  std::string prompt_file;
  int n_predict = 128;
  float temp = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  int64_t seed = -1;
  int threads = 0;
  int ctx = 4096;
  int chunk = 256;
  std::string kv_type = "auto";
  std::string numerics = "invariant";
  std::string isa = "auto";
  bool echo = false;
  bool logits_hash = false;
  bool ignore_eos = false;
  bool no_bos = false;
  bool no_parse_special = false;
  bool quiet = false;
  std::string spec;  // "": off, or draft with --draft-model
  std::string draft_model;
  int spec_k = 4;
};

void RunOptions(CLI::App* cmd, RunArgs* a) {
  cmd->description(
      "Generate text from a prompt. stdout carries exactly the generated text; "
      "stderr carries progress and speed.");
  AddModelOption(cmd, &a->model);
  cmd->add_option("-p,--prompt", a->prompt, "Prompt text (empty: start from BOS)");
  cmd->add_option("-f,--file", a->prompt_file, "Read the prompt from a file");
  cmd->add_option("-n,--n-predict", a->n_predict,
                  "Tokens to generate (-1: until end of text or context)")
      ->capture_default_str();
  cmd->add_option("--temp", a->temp, "Temperature; 0 = greedy (ties to the lower token id)")
      ->capture_default_str();
  cmd->add_option("--top-k", a->top_k, "Top-k (0 = off)")->capture_default_str();
  cmd->add_option("--top-p", a->top_p, "Top-p / nucleus (1 = off)")->capture_default_str();
  cmd->add_option("--min-p", a->min_p, "Min-p (0 = off)")->capture_default_str();
  cmd->add_option("-s,--seed", a->seed, "Sampling seed (-1: random, printed on stderr)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "Threads (0: all cores); never changes the output")
      ->capture_default_str();
  cmd->add_option("-c,--ctx", a->ctx, "Context length")->capture_default_str();
  cmd->add_option("--chunk", a->chunk, "Prefill chunk size; never changes the output")
      ->capture_default_str();
  AddNumericsOptions(cmd, &a->numerics, &a->kv_type);
  cmd->add_option("--isa", a->isa,
                  "Kernel path: auto, scalar, avx2, avx512 or neon; never changes the output")
      ->capture_default_str();
  cmd->add_flag("--echo", a->echo, "Print the prompt before the generated text");
  cmd->add_flag("--logits-hash", a->logits_hash,
                "Print an FNV-1a-64 hash of the final step's logits on stderr");
  cmd->add_flag("--ignore-eos", a->ignore_eos, "Keep generating past end-of-text tokens");
  cmd->add_flag("--no-bos", a->no_bos, "Do not add BOS even if the model asks for it");
  cmd->add_flag("--no-parse-special", a->no_parse_special,
                "Treat special-token text in the prompt as plain text");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress or speed report on stderr");
  cmd->add_option("--spec", a->spec,
                  "Speculative decoding: off, lookup (prompt lookup) or draft (--draft-model); "
                  "never changes the output [default: off, draft with --draft-model]")
      ->check(CLI::IsMember({"off", "lookup", "draft"}));
  cmd->add_option("--draft-model", a->draft_model,
                  "Draft model for --spec draft: a GGUF (or pulled name) with the target's "
                  "tokenizer, checked at load");
  AddRangeOption(cmd, "--spec-k", &a->spec_k,
                 "Most draft tokens verified per step (adaptive below)", 1, kMaxSpecK);
}

int RunRun(const RunArgs& a) {
  std::string prompt = a.prompt;
  if (!a.prompt_file.empty()) {
    auto text = ReadWholeFile(a.prompt_file, "prompt file");
    if (!text.ok()) return ReportError(text.status());
    prompt = std::move(*text);
  }
  auto isa = ParseIsa(a.isa);
  if (!isa.ok()) return ReportError(isa.status());
  auto numerics = ParseNumericsChoice(a.numerics, a.kv_type);
  if (!numerics.ok()) return ReportError(numerics.status());

  // `stet run` is one client of the serving engine: the same scheduler, paged
  // KV cache, sampler and kernels as `stet serve`, with one sequence slot.
  EngineOptions eo;
  eo.n_ctx = a.ctx;
  eo.kv_type = numerics->kv_type;
  eo.numerics = numerics->mode;
  eo.n_threads = ThreadsOrAllCores(a.threads);
  eo.isa = *isa;
  eo.chunk_size = std::max(1, a.chunk);
  eo.max_batch_tokens = eo.chunk_size;
  eo.max_seqs = 1;
  eo.prefix_cache = false;
  auto spec = ParseSpecMode(!a.spec.empty() ? a.spec : a.draft_model.empty() ? "off" : "draft");
  if (!spec.ok()) return ReportError(spec.status());
  eo.spec.mode = *spec;
  eo.spec.k = a.spec_k;
  eo.spec.draft_model = a.draft_model;
  if (Status st = ValidateSpecOptions(eo.spec); !st.ok()) return ReportError(st);
  eo.tp = dist::World();  // under mpirun -np N: rank 0 of the group
  auto opened = Engine::Open(a.model, eo, !a.quiet);
  if (!opened.ok()) return ReportError(opened.status());
  Engine& engine = **opened;
  const Model& model = engine.model();
  const Tokenizer& tok = engine.tokenizer();

  std::vector<int32_t> ids = tok.Encode(prompt, !a.no_bos, !a.no_parse_special);
  if (ids.empty() && tok.bos() >= 0) ids.push_back(tok.bos());  // generate "from nothing"

  RequestParams rp;
  rp.prompt = ids;
  rp.max_tokens = a.n_predict < 0 ? engine.n_ctx() : a.n_predict;
  rp.sampling.temperature = a.temp;  // the CLI's defaults (0.8/40/0.95/0.05), set explicitly
  rp.sampling.top_k = a.top_k;
  rp.sampling.top_p = a.top_p;
  rp.sampling.min_p = a.min_p;
  rp.sampling.seed = a.seed >= 0 ? static_cast<uint64_t>(a.seed) : NewSeed();  // printed below
  rp.ignore_eos = a.ignore_eos;
  rp.logits_hash = a.logits_hash;
  if (!a.quiet) {
    std::fprintf(
        stderr,
        "stet: %s, %d layers, isa %s, %d threads, seed %llu, prompt %zu tokens, speculation %s, "
        "fingerprint %s\n",
        model.hparams().arch->name, model.hparams().n_layer, IsaName(*isa), eo.n_threads,
        static_cast<unsigned long long>(*rp.sampling.seed), ids.size(), SpecModeName(eo.spec.mode),
        engine.fingerprint().c_str());
    if (!model.kernel_plan_note().empty()) {
      std::fprintf(stderr, "stet: %s\n", model.kernel_plan_note().c_str());
    }
  }
  if (a.echo) {
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
  }
  // SentencePiece marks word starts with a space; text that begins right after
  // BOS drops that first space (as SentencePiece's own decoder and llama2.c do).
  bool strip_space = tok.vocab().add_space_prefix && ids.size() == 1 && ids[0] == tok.bos();
  auto emit = [&](std::string piece) {
    if (strip_space && !piece.empty()) {
      if (piece[0] == ' ') piece.erase(0, 1);
      strip_space = false;
    }
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };
  // Events arrive on the engine's thread; this one waits for the finish.
  struct Progress {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    FinishReason finish = FinishReason::kNone;
    std::string error;
    int generated = 0;
    uint64_t last_hash = 0;
    std::chrono::steady_clock::time_point first_token;
  } pr;
  const auto t0 = std::chrono::steady_clock::now();
  auto sub = engine.Submit(rp, [&](const RequestEvent& ev) {
    if (ev.kind == RequestEvent::Kind::kToken) {
      if (pr.generated++ == 0) pr.first_token = std::chrono::steady_clock::now();
      pr.last_hash = ev.token.logits_hash;
      emit(ev.text_delta);
    } else if (ev.kind == RequestEvent::Kind::kFinished) {
      emit(ev.text_delta);
      std::lock_guard<std::mutex> lock(pr.mu);
      pr.done = true;
      pr.finish = ev.finish;
      pr.error = ev.error;
      pr.cv.notify_all();
    }
  });
  if (!sub.ok()) return ReportError(sub.status());
  {
    std::unique_lock<std::mutex> lock(pr.mu);
    pr.cv.wait(lock, [&] { return pr.done; });
  }
  const auto t_end = std::chrono::steady_clock::now();
  if (pr.finish == FinishReason::kError) return ReportError(Internal(pr.error));
  if (!a.quiet) {
    const double prefill = pr.generated > 0
                               ? std::chrono::duration<double>(pr.first_token - t0).count()
                               : std::chrono::duration<double>(t_end - t0).count();
    const double decode =
        pr.generated > 0 ? std::chrono::duration<double>(t_end - pr.first_token).count() : 0;
    const int decoded = std::max(0, pr.generated - 1);  // tokens after the first one
    std::fprintf(stderr,
                 "\nstet: prefill %zu tokens in %.3f s (%.1f tok/s); decode %d tokens in %.3f s "
                 "(%.1f tok/s)\n",
                 ids.size(), prefill, ids.size() / std::max(1e-9, prefill), decoded, decode,
                 decoded / std::max(1e-9, decode));
    EngineStats st = engine.stats();  // published between steps: wait for the last one
    for (int i = 0; i < 200 && st.running > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      st = engine.stats();
    }
    if (st.spec_draft_tokens > 0) {
      std::fprintf(stderr, "stet: speculation: %lld of %lld draft tokens accepted (%.1f%%)\n",
                   static_cast<long long>(st.spec_accepted_tokens),
                   static_cast<long long>(st.spec_draft_tokens),
                   100.0 * st.spec_accepted_tokens / st.spec_draft_tokens);
    }
  }
  if (a.logits_hash && pr.generated > 0) {
    std::fprintf(stderr, "logits-hash: fnv1a64:%016llx\n",
                 static_cast<unsigned long long>(pr.last_hash));
  }
  return kExitOk;
}

}  // namespace

CLI::App* AddRunCommand(CLI::App& app, int* exit_code) {
  return AddCommand(app, exit_code, "run", RunOptions, WithModels(RunRun));
}

}  // namespace stet::tools
