// Speculative decoding's speed on the serving engine, and proof it changed no
// byte: for each task (copy-heavy rewrite and free generation, greedy; free
// generation with seeded temperature 0.7) and concurrency,
// the same requests run on an engine with speculation off, by prompt lookup
// and by a draft model; reports median aggregate decode tok/s over --reps,
// the acceptance rate, and whether every request's tokens and logprobs equal
// the run without speculation. One JSON object per (task, concurrency, mode)
// on stdout (bench/spec/run.py makes the table).
// Copy answers end at the model's end marker (at most 2n tokens); free
// generation runs n tokens. At --conc 1 a task's four prompts run in turn.
//   stet_spec_bench -m TARGET [--draft DRAFT] [--threads 2] [--reps 3] [-n 128]
//                   [--conc 1,4] [--modes off,lookup,draft] [--k 4]   (off first: the reference)
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"

using namespace stet;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::string model, draft;
  int threads = 2, reps = 3, n = 128, k = 4;
  std::vector<int> conc = {1, 4};
  std::vector<std::string> modes = {"off", "lookup", "draft"};
  std::vector<std::string> tasks = {"copy", "free", "free-t0.7"};
};

// Four copy-heavy prompts (rewrite with one small change) and four open ones.
const char* kCopy[] = {
    "Rewrite the following paragraph, changing only the name Anna to Maria. Keep every other word "
    "the same.\n\nAnna woke up early on Saturday morning. She made a cup of coffee, opened the "
    "window and listened to the birds in the garden. After breakfast Anna walked to the market, "
    "where she bought apples, bread and a bunch of yellow flowers for her grandmother. On the way "
    "home she met her old teacher, who asked her about her studies and wished her luck.",
    "Rename the function add_numbers to sum_values in this code and change nothing else.\n\n"
    "def add_numbers(values):\n    total = 0\n    for v in values:\n        if v is None:\n"
    "            continue\n        total += v\n    return total\n\n\ndef average(values):\n"
    "    count = len([v for v in values if v is not None])\n    if count == 0:\n"
    "        return 0.0\n    return add_numbers(values) / count\n",
    "Copy this list exactly, but replace 'blue' with 'green'.\n\n1. The sky was blue and "
    "clear.\n2. The boat on the lake was painted blue.\n3. She wore a blue coat to the party.\n"
    "4. Blue birds sang in the tall trees.\n5. The old door was blue and white.\n6. His car is "
    "blue and very fast.",
    "Rewrite this email, changing the meeting day from Tuesday to Thursday and keeping "
    "everything else identical.\n\nHello team,\n\nOur weekly meeting will be on Tuesday at 10 "
    "am in the large conference room. Please bring your project updates and any questions you "
    "have about the new schedule. Lunch will be provided after the meeting on Tuesday.\n\nBest "
    "regards,\nSam",
};
const char* kFree[] = {
    "Write a short story about a robot who learns to paint.",
    "Explain why the sky is blue to a ten year old.",
    "Give me five ideas for a weekend trip in the mountains, with a sentence on each.",
    "Describe how bread is made, step by step.",
};

// The user turn in the target's chat format: Gemma's turn markers where the
// vocabulary has them, else ChatML (SmolLM2, Qwen).
std::string Chat(const Tokenizer& tok, const char* user) {
  if (tok.FindToken("<start_of_turn>")) {
    return std::string("<start_of_turn>user\n") + user + "<end_of_turn>\n<start_of_turn>model\n";
  }
  return std::string("<|im_start|>user\n") + user + "<|im_end|>\n<|im_start|>assistant\n";
}

struct Run {
  std::vector<std::vector<TokenOut>> out;  // per request
  double decode_tok_s = 0;
  int64_t decoded = 0;
  double seconds = 0;
  int64_t drafted = 0, accepted = 0;
};

struct Tracker {
  std::mutex mu;
  std::condition_variable cv;
  int open = 0;
  std::vector<Clock::time_point> first;
  std::vector<int> n_tok;
  std::vector<std::vector<TokenOut>> out;
};

EngineStats Settled(const Engine& e) {
  for (int i = 0; i < 5000; ++i) {
    const EngineStats st = e.stats();
    if (st.running == 0 && st.waiting == 0) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return e.stats();
}

// All requests submitted at once; decode tok/s = tokens after each request's
// first / (last finish - latest first token).
Run RunOnce(Engine& e, const std::vector<RequestParams>& reqs) {
  const EngineStats before = Settled(e);
  Tracker t;
  const size_t n = reqs.size();
  t.open = static_cast<int>(n);
  t.first.resize(n);
  t.n_tok.assign(n, 0);
  t.out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    auto sub = e.Submit(reqs[i], [&t, i](const RequestEvent& ev) {
      std::lock_guard<std::mutex> lock(t.mu);
      if (ev.kind == RequestEvent::Kind::kToken) {
        if (t.n_tok[i]++ == 0) t.first[i] = Clock::now();
        t.out[i].push_back(ev.token);
      } else if (ev.kind == RequestEvent::Kind::kFinished) {
        if (--t.open == 0) t.cv.notify_all();
      }
    });
    if (!sub.ok()) {
      std::fprintf(stderr, "submit: %s\n", sub.status().ToString().c_str());
      std::exit(1);
    }
  }
  std::unique_lock<std::mutex> lock(t.mu);
  t.cv.wait(lock, [&] { return t.open == 0; });
  const Clock::time_point end = Clock::now();
  const Clock::time_point start = *std::max_element(t.first.begin(), t.first.end());
  int decoded = 0;
  for (int c : t.n_tok) decoded += std::max(0, c - 1);
  lock.unlock();
  const EngineStats after = Settled(e);
  Run r;
  r.out = std::move(t.out);
  r.decoded = decoded;
  r.seconds = std::chrono::duration<double>(end - start).count();
  r.decode_tok_s = decoded / std::max(1e-9, r.seconds);
  r.drafted = after.spec_draft_tokens - before.spec_draft_tokens;
  r.accepted = after.spec_accepted_tokens - before.spec_accepted_tokens;
  return r;
}

bool SameOutputs(const std::vector<std::vector<TokenOut>>& a,
                 const std::vector<std::vector<TokenOut>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return false;
    for (size_t j = 0; j < a[i].size(); ++j) {
      if (a[i][j].id != b[i][j].id ||
          std::memcmp(&a[i][j].logprob, &b[i][j].logprob, sizeof(float)) != 0)
        return false;
    }
  }
  return true;
}

// Requests `first` .. first + conc - 1 (prompt i % 4) of a task. A copy task's
// answer ends where the model ends it (at most 2n tokens): past its end a small
// model rambles on in free text, which is not the copy task. Free generation
// runs n tokens past any end marker. Either way every mode gives the same
// tokens (that is the point), so the token counts match across modes.
std::vector<RequestParams> Requests(const Engine& e, const std::string& task, int first, int conc,
                                    int n) {
  std::vector<RequestParams> out;
  for (int i = first; i < first + conc; ++i) {
    RequestParams p;
    const char* user = task == "copy" ? kCopy[i % 4] : kFree[i % 4];
    p.prompt = e.tokenizer().Encode(Chat(e.tokenizer(), user), true, true);
    p.max_tokens = task == "copy" ? 2 * n : n;
    p.ignore_eos = task != "copy";
    p.sampling.temperature = task == "free-t0.7" ? 0.7f : 0.0f;
    p.sampling.seed = 1000 + i;
    out.push_back(std::move(p));
  }
  return out;
}

// All four prompts of a task, `conc` at a time (conc 1: the four one after
// another): decode tok/s = the batches' decoded tokens / their decode time.
Run RunTask(Engine& e, const std::string& task, int conc, int n) {
  Run all;
  for (int first = 0; first == 0 || first < 4; first += conc) {
    Run r = RunOnce(e, Requests(e, task, first, conc, n));
    for (auto& o : r.out) all.out.push_back(std::move(o));
    all.decoded += r.decoded;
    all.seconds += r.seconds;
    all.drafted += r.drafted;
    all.accepted += r.accepted;
  }
  all.decode_tok_s = all.decoded / std::max(1e-9, all.seconds);
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"speculative decoding: speed and byte identity"};
  app.add_option("-m,--model", a.model, "target GGUF")->required();
  app.add_option("--draft", a.draft, "draft GGUF (mode draft)");
  app.add_option("--threads", a.threads);
  app.add_option("--reps", a.reps);
  app.add_option("-n", a.n, "tokens per free request (copy: at most 2n)");
  app.add_option("--k", a.k, "most draft tokens per step");
  app.add_option("--conc", a.conc)->delimiter(',');
  app.add_option("--modes", a.modes)->delimiter(',');
  app.add_option("--tasks", a.tasks)->delimiter(',');
  bool dump = false;
  app.add_flag("--dump-prompts", dump, "print the prompts (chat text) as JSON and exit");
  CLI11_PARSE(app, argc, argv);
  if (dump) {
    nlohmann::json j;
    auto loaded = LoadModelAndTokenizer(a.model);
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
      return 1;
    }
    for (const char* c : kCopy) j["copy"].push_back(Chat(*loaded->tokenizer, c));
    for (const char* f : kFree) j["free"].push_back(Chat(*loaded->tokenizer, f));
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }

  // One engine per mode, all loaded up front; the modes run interleaved
  // (off, lookup, draft, off, ...) so the machine's slow drifts hit them alike.
  std::vector<std::unique_ptr<Engine>> engines;
  for (const std::string& mode : a.modes) {
    EngineOptions o;
    o.n_ctx = 1024;
    o.n_threads = a.threads;
    o.isa = BestIsa();
    o.max_seqs = 8;
    o.n_kv_blocks = 8 * 1024 / 16;
    o.prefix_cache = false;
    o.spec.k = a.k;
    if (mode == "lookup") o.spec.mode = SpecMode::kLookup;
    if (mode == "draft") {
      o.spec.mode = SpecMode::kDraft;
      o.spec.draft_model = a.draft;
    }
    auto e = Engine::Open(a.model, o);
    if (!e.ok()) {
      std::fprintf(stderr, "%s: %s\n", mode.c_str(), e.status().ToString().c_str());
      return 1;
    }
    engines.push_back(std::move(*e));
  }
  const size_t n_modes = engines.size();
  for (const std::string& task : a.tasks) {
    for (int conc : a.conc) {
      for (auto& e : engines) RunOnce(*e, Requests(*e, task, 0, 1, 8));  // warm-up
      std::vector<std::vector<double>> speeds(n_modes);
      std::vector<int64_t> drafted(n_modes), accepted(n_modes);
      std::vector<bool> same(n_modes, true);
      std::vector<std::vector<TokenOut>> const* ref = nullptr;
      std::vector<std::vector<std::vector<TokenOut>>> first(n_modes);
      for (int r = 0; r < a.reps; ++r) {
        for (size_t m = 0; m < n_modes; ++m) {
          Run run = RunTask(*engines[m], task, conc, a.n);
          speeds[m].push_back(run.decode_tok_s);
          drafted[m] += run.drafted;
          accepted[m] += run.accepted;
          if (r == 0) first[m] = run.out;
          if (a.modes[m] == "off" && !ref) ref = &first[m];
          if (!ref || !SameOutputs(run.out, *ref)) same[m] = false;
        }
      }
      for (size_t m = 0; m < n_modes; ++m) {
        std::vector<double> sorted = speeds[m];
        std::sort(sorted.begin(), sorted.end());
        nlohmann::json j = {{"mode", a.modes[m]},
                            {"task", task},
                            {"conc", conc},
                            {"tokens", a.n},
                            {"k", a.k},
                            {"decode_tok_s", sorted[sorted.size() / 2]},
                            {"runs", speeds[m]},
                            {"drafted", drafted[m]},
                            {"accepted", accepted[m]},
                            {"same_as_off", static_cast<bool>(same[m])}};
        std::printf("%s\n", j.dump().c_str());
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
