// `stet bench`: times Forward::Run the way llama-bench times llama_decode, so the two
// can be compared on one file. ppN: one batch of N prompt tokens (logits for the last),
// fresh KV each rep. tgN: N single-token steps (logits each) from an empty cache, as
// llama-bench's tgN, or after --tg-prompt untimed prompt tokens. tgN xB: B independent
// sequences, one Forward::Run of B tokens per step; aggregate tokens/s. tgNvK: N
// speculative verification steps of one sequence, K draft rows + 1 each (steps/s: the
// decode speed if every draft were rejected). Each test gets one untimed warm-up run;
// the reported value is the median over --reps.
#include "tools/cmd_bench.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "base/hash.h"
#include "base/median.h"
#include "base/rng.h"
#include "base/thread_pool.h"
#include "dist/leader.h"
#include "dist/mpi_world.h"
#include "engine/speculative.h"
#include "kernels/adaptive.h"
#include "kernels/matmul_table.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/paged_kv.h"
#include "tools/common.h"

namespace stet::tools {

namespace {

struct BenchArgs {
  std::string model;
  std::vector<int> n_prompt{128};
  std::vector<int> n_gen{128};
  std::vector<int> batch{1};
  std::vector<int> depth{0};  // untimed context tokens before each test (llama-bench -d)
  std::vector<int> spec_k;    // tgNvK tests: draft tokens verified per step
  int tg_prompt = 0;
  int threads = 0;
  int reps = 5;
  std::string isa = "auto";
  std::string numerics = "invariant";
  std::string kv_type = "auto";
  bool json = false;
  bool explain = false;
};

void BenchOptions(CLI::App* cmd, BenchArgs* a) {
  cmd->description(
      "Measure speed like llama-bench: ppN = prefill of N tokens in one forward batch (fresh "
      "KV each rep); tgN = N single-token decode steps from an empty cache (or after "
      "--tg-prompt tokens); with --batch B > 1, tgNxB = B sequences decoding N tokens each, "
      "one forward call of B tokens per step (aggregate tokens/s); with -d D, every test runs "
      "after D untimed context tokens (ppN@dD, tgN@dD, as llama-bench -d); with --spec-k K, "
      "tgNvK = N speculative verification steps of K+1 rows each (t/s counts steps: the "
      "decode speed if every draft were rejected). The KV cache is "
      "the server's paged one. One untimed warm-up per test; medians over --reps. Lists are "
      "comma-separated (-p 128,512).");
  AddModelOption(cmd, &a->model, "GGUF model file");
  // The test lists: comma-separated (-p 128,512), their defaults shown.
  auto list = [cmd](const char* flags, std::vector<int>* values, const char* help) {
    cmd->add_option(flags, *values, help)->delimiter(',')->capture_default_str();
  };
  list("-p,--n-prompt", &a->n_prompt, "Prompt lengths for ppN (0: none)");
  list("-n,--n-gen", &a->n_gen, "Decode lengths for tgN (0: none)");
  list("-b,--batch", &a->batch, "Sequences decoding at once (1: plain tg)");
  list("-d,--n-depth", &a->depth, "Untimed context tokens before each test");
  cmd->add_option("--spec-k", a->spec_k,
                  "Draft tokens verified per step for tgNvK tests (speculative decoding cost)")
      ->delimiter(',');
  cmd->add_option("--tg-prompt", a->tg_prompt,
                  "Untimed prompt tokens per sequence before the timed decode steps")
      ->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "Threads (0: all cores)")->capture_default_str();
  cmd->add_option("-r,--reps", a->reps, "Timed repetitions per test")->capture_default_str();
  cmd->add_option(
         "--isa", a->isa,
         "Kernel path: auto, scalar, avx2, avx512 or neon; a comma list (auto,avx2,avx512) "
         "measures each path in one process, the reps of every test taking turns, and "
         "prints a table per path (with --json, an array of their objects)")
      ->capture_default_str();
  AddNumericsOptions(cmd, &a->numerics, &a->kv_type);
  cmd->add_flag("--json", a->json, "Print one JSON object (per --isa path) instead of a table");
  cmd->add_flag(
      "--explain", a->explain,
      "Print the kernel table first: which MatMul row serves each weight type and row "
      "class (decode 1, small 2-15, batch 16-63, prefill 64+) per ISA, and the one --isa auto "
      "measured for this model");
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct TestResult {
  std::string name;  // "pp128", "tg128", "tg128x4"
  std::string kind;  // "pp", "tg" or "spec"
  int n_prompt = 0;
  int n_gen = 0;
  int depth = 0;
  int batch = 1;
  int spec_k = 0;
  std::vector<double> seconds;  // per rep
  std::vector<double> tok_s;    // per rep
  double median_tok_s = 0;
  double wire_bytes_per_token = 0;  // tensor parallelism: payload all ranks sent, per token
};

// "auto,avx2" -> {"auto", "avx2"} (empty items dropped).
std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    const size_t e = std::min(s.find(',', b), s.size());
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

// A token id for (rep, sequence, position): varied but reproducible.
int32_t TokenAt(uint32_t rep, uint32_t seq, uint32_t pos, int n_vocab) {
  const auto r = Philox4x32({pos, seq, rep, 0x62656e63u}, {0x73746574u, 0});
  return static_cast<int32_t>(r[0] % static_cast<uint32_t>(n_vocab));
}

// Under mpirun -np N the model is rank 0's shard and `leader` sends every
// forward step to the other ranks first (they run it on theirs).
class Bench {
 public:
  Bench(const Model& model, ThreadPool* pool, Isa isa, NumericsMode mode, DType kv_type,
        int max_ctx, dist::Leader* leader)
      : model_(model),
        kv_type_(kv_type),
        leader_(leader),
        forward_(model, pool, isa, max_ctx, mode, leader ? &leader->comm() : nullptr) {}

  // Payload bytes all ranks have sent so far (0 in one process).
  Result<int64_t> WireBytes() {
    if (!leader_) return int64_t{0};
    STET_ASSIGN_OR_RETURN(auto stats, leader_->Stats());
    int64_t sum = 0;
    for (const dist::RankStats& r : stats) sum += r.bytes_sent;
    return sum;
  }

  // Untimed context: positions [0, d) of b sequences, in forward calls of at
  // most 512 tokens (the same tokens for every rep; later reps overwrite only
  // what follows them).
  Status Fill(PagedKvCache& kv, int b, int d) {
    constexpr int kChunk = 512;
    for (int s = 0; s < b; ++s) {
      for (int i0 = 0; i0 < d; i0 += kChunk) {
        batch_.clear();
        for (int i = i0; i < std::min(d, i0 + kChunk); ++i) {
          batch_.push_back({TokenAt(999, s, i, n_vocab()), i, s, false});
        }
        STET_RETURN_IF_ERROR(Run(kv));
      }
    }
    return Status::Ok();
  }

  // One pp rep: n tokens at positions [d, d + n) of sequence 0 in one batch
  // (every row it reads past d is written first).
  Result<double> Prefill(PagedKvCache& kv, int d, int n, uint32_t rep) {
    batch_.clear();
    for (int i = 0; i < n; ++i) {
      batch_.push_back({TokenAt(rep, 0, d + i, n_vocab()), d + i, 0, i + 1 == n});
    }
    const double t0 = Now();
    STET_RETURN_IF_ERROR(Run(kv));
    return Now() - t0;
  }

  // One tg rep for b sequences: n timed single-token steps at positions [p, p + n).
  Result<double> Decode(PagedKvCache& kv, int b, int p, int n, uint32_t rep) {
    const double t0 = Now();
    for (int step = 0; step < n; ++step) {
      batch_.clear();
      for (int s = 0; s < b; ++s) {
        batch_.push_back({TokenAt(rep, s, p + step, n_vocab()), p + step, s, true});
      }
      STET_RETURN_IF_ERROR(Run(kv));
    }
    return Now() - t0;
  }

  // One verification rep: n timed steps of sequence 0, each feeding 1 + k
  // consecutive positions with logits for every row (what the engine runs to
  // verify k draft tokens); the window advances one position per step, as when
  // every draft is rejected.
  Result<double> Verify(PagedKvCache& kv, int p, int n, int k, uint32_t rep) {
    const double t0 = Now();
    for (int step = 0; step < n; ++step) {
      batch_.clear();
      for (int i = 0; i <= k; ++i) {
        const int pos = p + step + i;
        batch_.push_back({TokenAt(rep, 0, pos, n_vocab()), pos, 0, true});
      }
      STET_RETURN_IF_ERROR(Run(kv));
    }
    return Now() - t0;
  }

  const Model& model() const { return model_; }
  DType kv_type() const { return kv_type_; }

 private:
  Status Run(PagedKvCache& kv) {
    logits_.clear();
    if (leader_) STET_RETURN_IF_ERROR(leader_->Step(batch_, kv));
    return forward_.Run(batch_, kv, &logits_);
  }

  int n_vocab() const { return model_.hparams().n_vocab; }
  const Model& model_;
  DType kv_type_;
  dist::Leader* leader_;
  Forward forward_;
  std::vector<BatchToken> batch_;
  std::vector<float> logits_;
};

// The serving engine's KV layout: a paged cache whose blocks interleave across
// the sequences, as a free list hands them out under load (attention reads the
// block table in place).
PagedKvCache PagedFor(const Model& model, int n_seq, int n_ctx, DType type) {
  constexpr int kBlock = 16;
  const int per_seq = (n_ctx + kBlock - 1) / kBlock;
  PagedKvCache kv(model, n_seq * per_seq, kBlock, n_seq, type);
  kv.SplitBlocks(/*interleaved=*/true);
  return kv;
}

std::string TestName(const std::string& base, int depth) {
  return depth > 0 ? base + "@d" + std::to_string(depth) : base;
}

// The benches of one run (one per --isa path) and their results. Each test's
// reps go round the benches (rep 0 of every path, then rep 1, ...), so a machine
// whose speed drifts — shared memory bandwidth, a neighbour's load — meets every
// path alike, which separate runs minutes apart do not.
struct Paths {
  std::vector<Bench*> benches;
  std::vector<std::vector<TestResult>>* out;  // [bench][test]
};

// A warm-up rep's outcome, its time dropped.
Status Done(const Result<double>& r) { return r.ok() ? Status::Ok() : r.status(); }

// The KV cache a test runs in: n_seq sequences of ctx positions, the first
// `fill` of each filled before the reps.
struct TestCache {
  int n_seq, ctx, fill;
};

// One test on every bench: bench i gets its own cache `c`, filled, and one
// untimed op(bench, kv, warm, 1000); then op(bench, kv, count, rep) times one
// rep, `tokens` counting what its t/s divides.
template <typename Op>
Status RunTest(const Paths& paths, const TestResult& proto, int reps, double tokens, TestCache c,
               int warm, int count, Op&& op) {
  const size_t n = paths.benches.size();
  std::vector<PagedKvCache> kv;
  kv.reserve(n);
  for (Bench* b : paths.benches) {
    kv.push_back(PagedFor(b->model(), c.n_seq, c.ctx, b->kv_type()));
    STET_RETURN_IF_ERROR(b->Fill(kv.back(), c.n_seq, c.fill));
    STET_RETURN_IF_ERROR(Done(op(*b, kv.back(), warm, 1000)));
  }
  std::vector<TestResult> r(n, proto);
  std::vector<int64_t> wire0(n);
  for (size_t i = 0; i < n; ++i) {
    STET_ASSIGN_OR_RETURN(wire0[i], paths.benches[i]->WireBytes());
  }
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t i = 0; i < n; ++i) {
      STET_ASSIGN_OR_RETURN(const double sec,
                            op(*paths.benches[i], kv[i], count, static_cast<uint32_t>(rep)));
      r[i].seconds.push_back(sec);
      r[i].tok_s.push_back(tokens / sec);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    STET_ASSIGN_OR_RETURN(const int64_t wire1, paths.benches[i]->WireBytes());
    r[i].wire_bytes_per_token = static_cast<double>(wire1 - wire0[i]) / (reps * tokens);
    r[i].median_tok_s = Median(r[i].tok_s);
    (*paths.out)[i].push_back(std::move(r[i]));
  }
  return Status::Ok();
}

// tgNvK for each --spec-k K: steps per second of one sequence verifying K drafts.
Status RunVerifyTests(const BenchArgs& a, const Paths& paths, int n, int d) {
  for (int k : a.spec_k) {
    TestResult r;
    r.name = TestName("tg" + std::to_string(n) + "v" + std::to_string(k), d);
    r.kind = "spec";
    r.n_prompt = a.tg_prompt;
    r.n_gen = n;
    r.depth = d;
    r.spec_k = k;
    const int p = d + a.tg_prompt;
    STET_RETURN_IF_ERROR(RunTest(paths, r, a.reps, n, {1, p + n + k, p}, 1, n,
                                 [&](Bench& b, PagedKvCache& kv, int steps, uint32_t rep) {
                                   return b.Verify(kv, p, steps, k, rep);
                                 }));
  }
  return Status::Ok();
}

Status RunTests(const BenchArgs& a, const Paths& paths) {
  for (int d : a.depth) {
    for (int p : a.n_prompt) {
      if (p <= 0) continue;
      TestResult r;
      r.name = TestName("pp" + std::to_string(p), d);
      r.kind = "pp";
      r.n_prompt = p;
      r.depth = d;
      STET_RETURN_IF_ERROR(RunTest(paths, r, a.reps, p, {1, d + p, d}, p, p,
                                   [&](Bench& b, PagedKvCache& kv, int len, uint32_t rep) {
                                     return b.Prefill(kv, d, len, rep);
                                   }));
    }
    for (int n : a.n_gen) {
      if (n <= 0) continue;
      for (int b : a.batch) {
        TestResult r;
        r.name = TestName("tg" + std::to_string(n) + (b > 1 ? "x" + std::to_string(b) : ""), d);
        r.kind = "tg";
        r.n_prompt = a.tg_prompt;
        r.n_gen = n;
        r.batch = b;
        r.depth = d;
        const int p = d + a.tg_prompt;
        STET_RETURN_IF_ERROR(RunTest(paths, r, a.reps, static_cast<double>(b) * n, {b, p + n, p}, 1,
                                     n,
                                     [&](Bench& bench, PagedKvCache& kv, int steps, uint32_t rep) {
                                       return bench.Decode(kv, b, p, steps, rep);
                                     }));
      }
      STET_RETURN_IF_ERROR(RunVerifyTests(a, paths, n, d));
    }
  }
  return Status::Ok();
}

// general.file_type as llama.cpp names it (enum llama_ftype): the K-quant mixes, else
// the type whose row in the type table (numerics/dtype.cc) has that file type.
std::string FileTypeName(const gguf::GgufFile& f) {
  const gguf::MetaValue* v = f.Find("general.file_type");
  if (!v || !v->AsUInt()) return "";
  static const std::map<uint64_t, const char*> kMixes = {
      {11, "q3_k_s"}, {12, "q3_k_m"}, {13, "q3_k_l"}, {14, "q4_k_s"},
      {15, "q4_k_m"}, {16, "q5_k_s"}, {17, "q5_k_m"}};
  auto it = kMixes.find(*v->AsUInt());
  if (it != kMixes.end()) return it->second;
  for (DType t : ComputableDTypes()) {
    if (static_cast<uint64_t>(GetDTypeTraits(static_cast<uint32_t>(t))->llama_ftype) ==
        *v->AsUInt()) {
      return DTypeName(t);
    }
  }
  return "ftype" + std::to_string(*v->AsUInt());
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

template <typename T, typename F>
std::string JsonArray(const std::vector<T>& v, F format) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + format(v[i]);
  return out + "]";
}

struct ModelFacts {
  std::string name, arch, type;
  std::map<std::string, int> tensor_types;
  int64_t n_params = 0;
};

ModelFacts Facts(const Model& m) {
  ModelFacts f;
  const gguf::GgufFile& file = m.file();
  auto name = file.GetString("general.name");
  f.name = name.ok() ? *name : "";
  f.arch = m.hparams().arch->name;
  for (const gguf::TensorInfo& t : file.tensors()) {
    f.tensor_types[DTypeName(t.type)] += 1;
    f.n_params += t.n_elements;
  }
  f.type = FileTypeName(file);
  if (f.type.empty()) {  // the type of the most 2-D tensors
    std::map<std::string, int> matrices;
    for (const gguf::TensorInfo& t : file.tensors()) {
      if (t.dims.size() == 2) matrices[DTypeName(t.type)] += 1;
    }
    int best = -1;
    for (const auto& [type, count] : matrices) {
      if (count > best) f.type = type, best = count;
    }
  }
  return f;
}

void PrintJson(const BenchArgs& a, const Model& m, Isa isa, int threads, const char* numerics,
               const std::vector<TestResult>& tests, const std::vector<dist::RankStats>& ranks) {
  const ModelFacts f = Facts(m);
  auto ints = [](int v) { return std::to_string(v); };
  const char* commit = std::getenv("STET_GIT_COMMIT");
  // The headline numbers: the first pp test, and the first tg test (aggregate over its
  // batch, which decode_batch names; B = 1 unless --batch leaves 1 out).
  double prefill = -1, decode = -1;
  int decode_batch = 0;
  for (const TestResult& t : tests) {
    if (t.kind == "pp" && prefill < 0) prefill = t.median_tok_s;
    if (t.kind == "tg" && decode < 0) decode = t.median_tok_s, decode_batch = t.batch;
  }
  std::string types = "{";
  for (const auto& [type, count] : f.tensor_types) {
    types += (types.size() > 1 ? ", " : "") + JsonString(type) + ": " + std::to_string(count);
  }
  types += "}";
  std::string o = "{\n";
  auto field = [&o](const std::string& key, const std::string& value) {
    o += "  " + JsonString(key) + ": " + value + ",\n";
  };
  field("tool", JsonString("stet bench"));
  field("model", JsonString(a.model));
  field("model_name", JsonString(f.name));
  field("arch", JsonString(f.arch));
  field("type", JsonString(f.type));
  field("tensor_types", types);
  field("n_layer", ints(m.hparams().n_layer));
  field("n_params", std::to_string(f.n_params));
  field("weight_bytes", std::to_string(m.weight_bytes()));
  field("file_bytes", std::to_string(m.file().file_size()));
  field("packed_bytes", std::to_string(m.packed_bytes()));
  field("threads", ints(threads));
  field("ranks", ints(static_cast<int>(ranks.size())));
  field("peak_rss_bytes", JsonArray(ranks, [](const dist::RankStats& r) {
          return std::to_string(r.peak_rss_bytes);
        }));
  field("isa", JsonString(IsaName(isa)));
  field("best_isa", JsonString(IsaName(ResolveIsa(isa))));
  if (m.kernel_plan() != nullptr) {
    field("kernel_plan", JsonString(m.kernel_plan()->ToString()));
    field("kernel_plan_note", JsonString(m.kernel_plan_note()));
  }
  field("numerics", JsonString(numerics));
  field("kv_type", JsonString(a.kv_type));
  field("n_prompt", JsonArray(a.n_prompt, ints));
  field("n_gen", JsonArray(a.n_gen, ints));
  field("batch", JsonArray(a.batch, ints));
  field("tg_prompt", ints(a.tg_prompt));
  field("depth", JsonArray(a.depth, ints));
  field("reps", ints(a.reps));
  field("commit", commit && *commit ? JsonString(commit) : "null");
  field("cpu", JsonString(CpuModelName()));
  field("prefill_tok_s", prefill >= 0 ? JsonNumber(prefill) : "null");
  field("decode_tok_s", decode >= 0 ? JsonNumber(decode) : "null");
  field("decode_batch", decode >= 0 ? ints(decode_batch) : "null");
  o += "  \"tests\": [";
  for (size_t i = 0; i < tests.size(); ++i) {
    const TestResult& t = tests[i];
    o += std::string(i ? "," : "") + "\n    {\"test\": " + JsonString(t.name) +
         ", \"kind\": " + JsonString(t.kind) + ", \"n_prompt\": " + ints(t.n_prompt) +
         ", \"n_gen\": " + ints(t.n_gen) + ", \"batch\": " + ints(t.batch) +
         ", \"spec_k\": " + ints(t.spec_k) + ", \"depth\": " + ints(t.depth) +
         ", \"median_tok_s\": " + JsonNumber(t.median_tok_s) +
         ", \"wire_bytes_per_token\": " + JsonNumber(t.wire_bytes_per_token) +
         ", \"tok_s\": " + JsonArray(t.tok_s, JsonNumber) +
         ", \"seconds\": " + JsonArray(t.seconds, JsonNumber) + "}";
  }
  o += "\n  ]\n}\n";
  std::fputs(o.c_str(), stdout);
}

void PrintTable(const BenchArgs& a, const Model& m, Isa isa, int threads, const char* numerics,
                const std::vector<TestResult>& tests, const std::vector<dist::RankStats>& ranks) {
  const ModelFacts f = Facts(m);
  std::printf("model: %s (%s%s%s, %s, %d layers, %.2f M params)\n", a.model.c_str(), f.name.c_str(),
              f.name.empty() ? "" : ", ", f.arch.c_str(), f.type.c_str(), m.hparams().n_layer,
              f.n_params / 1e6);
  std::printf(
      "weights read per token: %.1f MiB; isa %s, %d threads, numerics %s, kv %s; cpu %s\n\n",
      m.weight_bytes() / 1048576.0, IsaName(isa), threads, numerics, a.kv_type.c_str(),
      CpuModelName().c_str());
  if (ranks.size() > 1) {  // tensor parallelism: weights per token above are rank 0's
    std::printf("tensor parallelism: %zu ranks; peak RSS per rank:", ranks.size());
    for (const dist::RankStats& r : ranks) std::printf(" %.1f MiB", r.peak_rss_bytes / 1048576.0);
    std::printf("\n");
    for (const TestResult& t : tests) {
      if (t.kind != "spec") {
        std::printf("  %s: %.0f bytes sent between ranks per token\n", t.name.c_str(),
                    t.wire_bytes_per_token);
      }
    }
    std::printf("\n");
  }
  std::printf("| %-10s | %5s | %4s | %12s | %10s | %10s |\n", "test", "batch", "reps",
              "t/s (median)", "min", "max");
  std::printf("|%s|%s|%s|%s|%s|%s|\n", "------------",
              "------:", "-----:", "-------------:", "-----------:", "-----------:");
  for (const TestResult& t : tests) {
    const auto [lo, hi] = std::minmax_element(t.tok_s.begin(), t.tok_s.end());
    std::printf("| %-10s | %5d | %4zu | %12.2f | %10.2f | %10.2f |\n", t.name.c_str(), t.batch,
                t.tok_s.size(), t.median_tok_s, *lo, *hi);
  }
}

// The other ranks load their shards of the same file (rank 0 checks its hash).
Status StartGroup(dist::Leader& leader, const std::string& path, int max_ctx, NumericsMode mode,
                  Isa isa, int threads) {
  dist::GroupConfig gc;
  gc.model_path = path;
  gc.max_ctx = max_ctx;
  gc.numerics = mode;
  gc.isa = isa;
  gc.n_threads = std::max(1, threads);
  STET_RETURN_IF_ERROR(leader.Start(gc));
  Result<std::string> sha = Sha256File(path);
  Status loaded = leader.AwaitLoaded(sha.ok() ? *sha : std::string());  // ends the collective
  return sha.ok() ? loaded : sha.status();
}

int RunBench(const BenchArgs& a) {
  auto usage = [](const std::string& msg) {
    std::fprintf(stderr, "stet: error: %s\n", msg.c_str());
    return kExitUsage;
  };
  auto choice = ParseNumericsChoice(a.numerics, a.kv_type);
  if (!choice.ok()) return usage(choice.status().message());
  const NumericsMode* numerics = &choice->mode;
  const DType kv_type = choice->kv_type;
  std::vector<Isa> isas;
  for (const std::string& name : SplitComma(a.isa)) {
    auto isa = ParseIsa(name);
    if (!isa.ok()) return ReportError(isa.status());
    if (std::find(isas.begin(), isas.end(), *isa) != isas.end()) {
      return usage("--isa names " + name + " twice");
    }
    isas.push_back(*isa);
  }
  if (isas.empty()) return usage("--isa names no path");
  if (a.reps < 1) return usage("--reps must be at least 1");
  if (a.tg_prompt < 0) return usage("--tg-prompt must be >= 0");
  for (int v : a.n_prompt)
    if (v < 0) return usage("-p values must be >= 0");
  for (int v : a.n_gen)
    if (v < 0) return usage("-n values must be >= 0");
  for (int v : a.batch)
    if (v < 1) return usage("--batch values must be >= 1");
  for (int v : a.depth)
    if (v < 0) return usage("-d values must be >= 0");
  for (int v : a.spec_k)
    if (v < 1 || v > kMaxSpecK) return usage("--spec-k values must be in [1, 32]");

  TpComm* world = dist::World();  // under mpirun -np N: rank 0 of the group
  auto model = Model::LoadShard(a.model, 0, world ? world->size() : 1, /*progress=*/!a.json);
  if (!model.ok()) return ReportError(model.status());
  const int threads = ThreadsOrAllCores(a.threads);
  if (world && isas.size() > 1) return usage("--isa lists run in one process, not under mpirun");
  const bool tuned = std::find(isas.begin(), isas.end(), Isa::kAuto) != isas.end();
  // --isa auto: the MatMul rows measured on this model (never changes a bit).
  if (tuned) {
    const std::string note = (*model)->TuneKernels(std::max(1, threads));
    if (!a.json) std::fprintf(stderr, "stet: %s\n", note.c_str());
  }
  const Model& m = **model;
  if (a.explain) {
    std::printf("kernel table on %s (%s; rows: kernels/matmul_table.h):\n%s\n",
                CpuModelName().c_str(),
                tuned ? m.kernel_plan_note().c_str() : "--isa forces one path",
                kernels::DescribeKernelTable(m.kernel_plan()).c_str());
  }
  int max_ctx = 1;
  for (int d : a.depth) {
    for (int p : a.n_prompt) max_ctx = std::max(max_ctx, d + p);
    int most_k = 0;
    for (int k : a.spec_k) most_k = std::max(most_k, k);
    for (int n : a.n_gen) max_ctx = std::max(max_ctx, d + a.tg_prompt + n + most_k);
  }
  if (max_ctx > m.hparams().n_ctx_train) {
    return ReportError(InvalidArgument("the tests need " + std::to_string(max_ctx) +
                                       " positions; the model was trained for " +
                                       std::to_string(m.hparams().n_ctx_train)));
  }
  ThreadPool pool(std::max(1, threads));
  std::unique_ptr<dist::Leader> leader;
  if (world) {
    leader = std::make_unique<dist::Leader>(*world);
    Status st = StartGroup(*leader, a.model, max_ctx, *numerics, isas[0], threads);
    if (!st.ok()) return ReportError(st);
  }
  std::vector<std::unique_ptr<Bench>> benches;
  std::vector<std::vector<TestResult>> tests(isas.size());
  Paths paths{{}, &tests};
  for (Isa isa : isas) {
    benches.push_back(
        std::make_unique<Bench>(m, &pool, isa, *numerics, kv_type, max_ctx, leader.get()));
    paths.benches.push_back(benches.back().get());
  }
  Status st = RunTests(a, paths);
  if (!st.ok()) return ReportError(st);
  std::vector<dist::RankStats> ranks = {{0, dist::PeakRssBytes()}};
  if (leader) {
    auto all = leader->Stats();
    if (!all.ok()) return ReportError(all.status());
    ranks = *all;
  }
  BenchArgs shown = a;  // the KV type in use, not "auto"
  shown.kv_type = DTypeName(kv_type);
  if (a.json && isas.size() > 1) std::fputs("[\n", stdout);
  for (size_t i = 0; i < isas.size(); ++i) {
    if (a.json) {
      if (i > 0) std::fputs(",\n", stdout);
      PrintJson(shown, m, isas[i], threads, NumericsModeName(*numerics), tests[i], ranks);
    } else {
      if (i > 0) std::printf("\n");
      if (isas.size() > 1) {
        std::printf("path %s (%zu paths, the reps of each test taking turns)\n", IsaName(isas[i]),
                    isas.size());
      }
      PrintTable(shown, m, isas[i], threads, NumericsModeName(*numerics), tests[i], ranks);
    }
  }
  if (a.json && isas.size() > 1) std::fputs("]\n", stdout);
  return kExitOk;
}

}  // namespace

CLI::App* AddBenchCommand(CLI::App& app, int* exit_code) {
  return AddCommand(app, exit_code, "bench", BenchOptions, RunBench);
}

}  // namespace stet::tools
