// TuneMatMulPlan (matmul_tune.h): per (type, class), every candidate row runs the
// same passes over the model's own matrices, in rotating order so that no row
// always follows the same one (cache and frequency state); the row with the
// lowest median time relative to each pass's fastest wins, and for the streaming
// classes a tie (within TuneOptions::tie) goes to the row faster on cached
// weights. The activations are fixed pseudo-random values.
#include "kernels/matmul_tune.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "base/check.h"
#include "base/median.h"

namespace stet::kernels {

namespace {

using Clock = std::chrono::steady_clock;

// Rows that may serve (t, c) for matrices whose packed copies are `packed`.
std::vector<const MatMulKernel*> Candidates(DType t, RowClass c, bool packed) {
  std::vector<const MatMulKernel*> out, scalar;
  for (const MatMulKernel& k : MatMulKernels()) {
    if (k.type != t || (k.classes & ClassBit(c)) == 0 || !KernelRunsHere(k)) continue;
    if (k.packed == Packed::kNeeds && !packed) continue;
    (k.isa == Isa::kScalar ? scalar : out).push_back(&k);
  }
  return out.empty() ? scalar : out;
}

// The matrices cut into row ranges of at most about max_bytes (whole 16-row groups,
// so a packed copy is cut with them): a pass can then be short even where one
// matrix (a large vocabulary's output) is large.
std::vector<WeightView> Slices(const std::vector<const WeightView*>& mats, int64_t max_bytes) {
  std::vector<WeightView> out;
  for (const WeightView* w : mats) {
    const int64_t rows =
        std::max<int64_t>(16, max_bytes / std::max<int64_t>(1, w->row_bytes)) / 16 * 16;
    for (int64_t r0 = 0; r0 < w->rows; r0 += rows) {
      WeightView v = *w;
      v.rows = std::min(rows, w->rows - r0);
      v.data = static_cast<const uint8_t*>(w->data) + r0 * w->row_bytes;
      if (w->packed != nullptr) {
        WeightView head = *w;
        head.rows = r0;  // a multiple of 16: its packed bytes are the offset
        v.packed = static_cast<const uint8_t*>(w->packed) + PackedBytes(head);
      }
      out.push_back(v);
    }
  }
  return out;
}

// The matrices of one pass: the type's, in model order from `*next` (cycling), until
// `bytes` (prefill: at most one round). *next moves past them, so consecutive
// passes read other matrices where the type has more than one pass's worth: decode
// streams from memory, as it does in the model, not from the caches.
std::vector<const WeightView*> PassSet(const std::vector<WeightView>& mats, int64_t bytes,
                                       bool cycle, size_t* next) {
  std::vector<const WeightView*> out;
  int64_t total = 0;
  for (size_t i = 0; total < bytes && (cycle || i < mats.size()) && i < 4096; ++i) {
    const WeightView* w = &mats[(*next + i) % mats.size()];
    out.push_back(w);
    total += w->rows * w->row_bytes;
  }
  *next = (*next + out.size()) % mats.size();
  return out;
}

// The fastest pass: other processes and interrupts only ever add time, so the
// minimum is the estimate least disturbed by a busy machine.
double Fastest(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// times[c][i]: pass i of candidate c; the candidates of a pass run back to back
// over the same matrices, `pass(i)`, in an order rotating by pass. Pass 0 warms
// each row up and is not kept.
template <typename PassFn>
std::vector<std::vector<double>> TimePasses(const std::vector<const MatMulKernel*>& cands, int reps,
                                            const float* x, int64_t m, float* y, ThreadPool* pool,
                                            PassFn&& pass) {
  std::vector<std::vector<double>> times(cands.size());
  for (int rep = 0; rep <= reps; ++rep) {
    const std::vector<const WeightView*> mats = pass(rep);
    for (size_t j = 0; j < cands.size(); ++j) {
      const size_t ci = (j + static_cast<size_t>(rep)) % cands.size();
      const auto t0 = Clock::now();
      for (const WeightView* w : mats) MatMulWith(*cands[ci], &w, 1, x, m, &y, pool, BestIsa());
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      if (rep > 0) times[ci].push_back(us);
    }
  }
  return times;
}

}  // namespace

std::vector<double> RelativeTimes(const std::vector<std::vector<double>>& times) {
  std::vector<double> rel(times.size());
  for (size_t c = 0; c < times.size(); ++c) {
    std::vector<double> r;
    for (size_t i = 0; i < times[c].size(); ++i) {
      double best = times[c][i];
      for (const auto& t : times) best = std::min(best, t[i]);
      r.push_back(times[c][i] / best);
    }
    rel[c] = Median(r);
  }
  return rel;
}

const MatMulKernel* ChooseTuned(const std::vector<TuneCandidate>& cs, bool streaming, double tie) {
  if (cs.empty()) return nullptr;
  const TuneCandidate* best = &cs[0];
  for (const TuneCandidate& c : cs) {
    if (c.rel < best->rel || (c.rel == best->rel && c.us < best->us)) best = &c;
  }
  if (!streaming) return best->row;
  // A tied row replaces the streaming best only where it is clearly faster in
  // cache: two rows of the same arithmetic (the prefetch variants) differ there
  // by noise, and noise must not move a plan off the row that streamed best.
  const TuneCandidate* pick = best;
  for (const TuneCandidate& c : cs) {
    if (c.rel > best->rel * (1 + tie) || c.hot_us >= best->hot_us * (1 - tie)) continue;
    if (c.hot_us < pick->hot_us) pick = &c;
  }
  return pick->row;
}

namespace {

std::vector<float> TuneActivations(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  uint32_t s = 12345;
  for (float& v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int32_t>(s >> 8) - (1 << 23)) * 0x1p-23f;
  }
  return x;
}

TuneEntry Measure(DType t, RowClass c, const std::vector<const WeightView*>& mats,
                  const TuneOptions& o) {
  bool packed = true;
  int64_t max_rows = 0, max_cols = 0;
  for (const WeightView* w : mats) {
    packed = packed && w->packed != nullptr;
    max_rows = std::max(max_rows, w->rows);
    max_cols = std::max(max_cols, w->cols);
  }
  TuneEntry e{t, c, {}, nullptr};
  const std::vector<const MatMulKernel*> cands = Candidates(t, c, packed);
  if (cands.size() <= 1) {
    e.chosen = cands.empty() ? nullptr : cands[0];
    return e;
  }
  const int64_t m = c == RowClass::kDecode  ? 1
                    : c == RowClass::kSmall ? o.small_rows
                    : c == RowClass::kBatch ? o.batch_rows
                                            : o.prefill_rows;
  const bool streaming = c == RowClass::kDecode || c == RowClass::kSmall;
  // Compute-bound passes do about the same work at either row count.
  const int64_t bytes = streaming ? o.stream_bytes : o.prefill_bytes * o.batch_rows / m;
  const std::vector<WeightView> slices = Slices(mats, streaming ? o.stream_slice_bytes : bytes / 2);
  const std::vector<float> x = TuneActivations(m * max_cols);
  std::vector<float> y(static_cast<size_t>(m * max_rows));
  size_t next = 0;
  // Streaming passes move on through the matrices (decode streams from memory, as
  // in the model; a pass reads more than the last-level cache holds, so the next
  // candidate over the same matrices finds none of them there); compute-bound
  // passes repeat the same ones (cache-friendly, as in the model). Pass 0 warms
  // each row up with one matrix.
  const auto times = TimePasses(cands, o.reps, x.data(), m, y.data(), o.pool, [&](int rep) {
    if (!streaming) next = 0;
    return PassSet(slices, rep == 0 ? 1 : bytes, streaming, &next);
  });
  const std::vector<double> rel = RelativeTimes(times);
  std::vector<std::vector<double>> hot(cands.size());
  if (streaming) {
    const std::vector<WeightView> small = Slices(mats, o.hot_bytes);
    hot = TimePasses(cands, o.reps, x.data(), m, y.data(), o.pool, [&](int) {
      size_t first = 0;
      return PassSet(small, o.hot_bytes, false, &first);
    });
  }
  for (size_t j = 0; j < cands.size(); ++j) {
    e.us.push_back({cands[j], Fastest(times[j]), rel[j], streaming ? Fastest(hot[j]) : 0.0});
  }
  e.chosen = ChooseTuned(e.us, streaming, o.tie);
  return e;
}

}  // namespace

TuneResult TuneMatMulPlan(std::span<const WeightView* const> mats, const TuneOptions& o) {
  const auto t0 = Clock::now();
  TuneResult r;
  std::map<uint32_t, std::vector<const WeightView*>> by_type;
  for (const WeightView* w : mats) {
    if (w->rows > 0 && w->data != nullptr) by_type[static_cast<uint32_t>(w->type)].push_back(w);
  }
  for (const auto& [id, views] : by_type) {
    for (int c = 0; c < kRowClasses; ++c) {
      TuneEntry e = Measure(static_cast<DType>(id), RowClass(c), views, o);
      if (e.chosen != nullptr) r.plan.Set(e.type, e.row_class, e.chosen);
      r.entries.push_back(std::move(e));
    }
  }
  r.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return r;
}

std::string DescribeTuning(const TuneResult& r) {
  std::string out;
  char buf[96];
  for (const TuneEntry& e : r.entries) {
    out += std::string(DTypeName(e.type)) + " " + RowClassName(e.row_class) + ":";
    if (e.us.empty()) out += std::string(" ") + (e.chosen ? e.chosen->name : "-") + " (only row)";
    for (size_t j = 0; j < e.us.size(); ++j) {
      const TuneCandidate& c = e.us[j];
      std::snprintf(buf, sizeof buf, "%s %s %.0f us x%.2f", j ? "," : "", c.row->name, c.us, c.rel);
      out += buf;
      if (c.hot_us > 0) {
        std::snprintf(buf, sizeof buf, " hot %.0f us", c.hot_us);
        out += buf;
      }
      if (c.row == e.chosen) out += " <- chosen";
    }
    out += "\n";
  }
  return out;
}

}  // namespace stet::kernels
