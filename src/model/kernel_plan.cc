// Model::TuneKernels: the plan of MatMul rows Isa::kAuto uses for this model —
// measured on its own matrices (kernels/matmul_tune.h), or read back from the
// cache of an earlier measurement with the same CPU, binary, thread count and
// matrix shapes, or given by STET_KERNEL_PLAN. Whatever the plan, no output bit
// changes (every row equals the scalar reference); only which path runs does.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/cpu_features.h"
#include "base/hash.h"
#include "base/thread_pool.h"
#include "base/width_policy.h"
#include "kernels/matmul_tune.h"
#include "model/model.h"

namespace stet {

namespace {

// What decides a measurement: the CPU (and the paths it reports: STET_MAX_ISA), this binary (its
// kernels), the thread count and the shapes and types (and packed copies) of the matrices.
std::string PlanKey(const std::vector<const kernels::WeightView*>& mats, int n_threads) {
  std::string id =
      CpuModelName() + "|best=" + IsaName(BestIsa()) + "|threads=" + std::to_string(n_threads);
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  struct stat st {};
  if (n > 0) {
    exe[n] = '\0';
    if (stat(exe, &st) == 0) {
      id += "|exe=" + std::string(exe) + ":" + std::to_string(st.st_size) + ":" +
            std::to_string(st.st_mtime);
    }
  }
  for (const kernels::MatMulKernel& k : kernels::MatMulKernels()) {
    id += std::string("|") + k.name + ":" + std::to_string(static_cast<int>(k.type));
  }
  for (const kernels::WeightView* w : mats) {
    id += "|" + std::to_string(static_cast<int>(w->type)) + "x" + std::to_string(w->rows) + "x" +
          std::to_string(w->cols) + (w->packed ? "p" : "");
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(Fnv1a64(id.data(), id.size())));
  return hex;
}

std::string CacheDir() {
  if (const char* dir = std::getenv("STET_KERNEL_CACHE")) return dir;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/stet/kernel-plans";
}

bool ReadPlan(const std::string& path, kernels::MatMulPlan* plan) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = kernels::MatMulPlan::Parse(ss.str());
  if (!parsed.ok() || parsed->empty()) return false;
  *plan = *parsed;
  return true;
}

// The share of the pool's thread time since (t0, waited0) spent waiting for a
// core, or 0 where the kernel does not say. Busy means what it means to the
// pool itself: more than WidthPolicy::kBusyShare.
double BusyShare(const ThreadPool& pool, std::chrono::steady_clock::time_point t0,
                 int64_t waited0) {
  const int64_t waited = pool.RunDelayNanos();
  if (waited0 < 0 || waited < waited0) return 0;
  const double wall =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  return wall > 0 ? static_cast<double>(waited - waited0) / (wall * pool.size()) : 0;
}

// Written to a temporary file and renamed: concurrent loads never read half a plan.
void WritePlan(const std::string& path, const std::string& text) {
  const std::string dir = path.substr(0, path.rfind('/'));
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') mkdir(dir.substr(0, i).c_str(), 0755);
  }
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) return;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace

std::vector<const kernels::WeightView*> Model::MatMulViews() const {
  std::vector<const kernels::WeightView*> out;
  for (const LayerWeights& L : w_.layers) {
    for (const kernels::WeightView* w :
         {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down, &L.router}) {
      if (w->data != nullptr) out.push_back(w);
    }
    for (const auto* exps : {&L.gate_exps, &L.up_exps, &L.down_exps}) {
      for (const kernels::WeightView& w : *exps) out.push_back(&w);
    }
  }
  out.push_back(&w_.output);
  return out;
}

void Model::SetKernelPlan(const kernels::MatMulPlan& plan) {
  plan_ = std::make_unique<kernels::MatMulPlan>(plan);
  for (LayerWeights& L : w_.layers) {
    for (kernels::WeightView* w :
         {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down, &L.router}) {
      w->plan = plan_.get();
    }
    for (auto* exps : {&L.gate_exps, &L.up_exps, &L.down_exps}) {
      for (kernels::WeightView& w : *exps) w.plan = plan_.get();
    }
  }
  w_.output.plan = plan_.get();
  w_.token_embd.plan = plan_.get();
}

std::string Model::TuneKernels(int n_threads) {
  plan_note_ = TuneKernelsOnce(n_threads);
  return plan_note_;
}

std::string Model::TuneKernelsOnce(int n_threads) {
  if (const char* spec = std::getenv("STET_KERNEL_PLAN")) {
    auto plan = kernels::MatMulPlan::Parse(spec);
    if (!plan.ok()) return "kernel plan: STET_KERNEL_PLAN ignored: " + plan.status().message();
    SetKernelPlan(*plan);
    return "kernel plan: from STET_KERNEL_PLAN";
  }
  if (const char* tune = std::getenv("STET_KERNEL_TUNE"); tune && std::string(tune) == "0") {
    return "kernel plan: the best ISA's rows (STET_KERNEL_TUNE=0)";
  }
  const std::vector<const kernels::WeightView*> mats = MatMulViews();
  const std::string path = CacheDir() + "/" + PlanKey(mats, n_threads) + ".plan";
  kernels::MatMulPlan cached;
  if (ReadPlan(path, &cached)) {
    SetKernelPlan(cached);
    return "kernel plan: measured earlier on this CPU (" + path + ")";
  }
  ThreadPool pool(n_threads < 1 ? 1 : n_threads);
  kernels::TuneOptions o;
  o.pool = &pool;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t waited0 = pool.RunDelayNanos();
  const kernels::TuneResult r = kernels::TuneMatMulPlan(mats, o);
  SetKernelPlan(r.plan);
  // One row per (type, class) of this model on this CPU (an x86 without AVX2; f32
  // weights without AVX-512): nothing was timed, so nothing is worth keeping either.
  if (std::all_of(r.entries.begin(), r.entries.end(),
                  [](const kernels::TuneEntry& e) { return e.us.empty(); })) {
    return "kernel plan: one row serves each class on this CPU (nothing to measure)";
  }
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.0f", r.ms);
  // A plan measured while other processes held the cores times the machine's
  // load, not the kernels: use it now, but measure again at the next load
  // rather than keep it for good.
  const double busy = BusyShare(pool, t0, waited0);
  if (busy > WidthPolicy::kBusyShare) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.0f%%", 100 * busy);
    return "kernel plan: measured in " + std::string(ms) + " ms on a busy machine (its threads " +
           "waited " + pct + " of the time for a core): used, not cached";
  }
  std::string text = "# stet kernel plan, measured on " + CpuModelName() + " with " +
                     std::to_string(n_threads) + " threads (fastest pass, us):\n";
  std::istringstream lines(kernels::DescribeTuning(r));
  for (std::string line; std::getline(lines, line);) text += "# " + line + "\n";
  WritePlan(path, text + r.plan.ToString());
  return "kernel plan: measured in " + std::string(ms) + " ms (" + path + ")";
}

}  // namespace stet
