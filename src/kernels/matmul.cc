// MatMul and MatMulGroup: the kernel table's row (matmul_table.h) for the weight
// type, the ISA and the row count; the activations quantized and laid out once per
// call, before the parallel region, into per-thread scratch that only grows; then
// threads split w.rows only (rule R2), so no thread count or batch size can reach a
// reduction order. Which row runs never changes a bit (R4). MatMulGroupRefined (the
// invariant mode's) lays out x and its residual as 2m rows, each x row beside its
// residual's, and adds each pair's two outputs in the parallel region (the AVX-512
// vertical kernels as they store them).
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "base/thread_pool.h"
#include "kernels/internal.h"

namespace stet::kernels {

namespace {

uint8_t* Carve(std::vector<uint8_t>* storage, size_t* offset, size_t bytes) {
  constexpr size_t kAlign = 64;
  uint8_t* base = storage->data();
  const uintptr_t p = reinterpret_cast<uintptr_t>(base) + *offset;
  const size_t pad = (kAlign - p % kAlign) % kAlign;
  uint8_t* out = base + *offset + pad;
  *offset += pad + bytes;
  return out;
}

// Grows storage to hold `bytes` plus alignment slack for `n_arrays` arrays.
void Reserve(std::vector<uint8_t>* storage, size_t bytes, int n_arrays) {
  const size_t need = bytes + static_cast<size_t>(n_arrays) * 64;
  if (storage->size() < need) storage->resize(need);
}

// The thread that calls MatMul owns these; pool workers only read them while
// the caller waits in ThreadPool::Run.
thread_local std::vector<uint8_t> tls_act_storage;
thread_local std::vector<uint8_t> tls_act_layout;  // the AVX-512 layouts of the same rows

}  // namespace

void PrepareActQ8(int64_t m, int64_t k, std::vector<uint8_t>* storage, ActQ8* a) {
  STET_CHECK(k % kQK == 0);
  a->m = m;
  a->k = k;
  a->nb = k / kQK;
  a->nb_pad = (a->nb + kLanes - 1) / kLanes * kLanes;
  const size_t nblk = static_cast<size_t>(m * a->nb_pad);
  const size_t qs_bytes = nblk * kQK, f_bytes = nblk * 4;
  Reserve(storage, qs_bytes + 3 * f_bytes, 4);
  size_t off = 0;
  a->qs = reinterpret_cast<int8_t*>(Carve(storage, &off, qs_bytes));
  a->d = reinterpret_cast<float*>(Carve(storage, &off, f_bytes));
  a->s = reinterpret_cast<float*>(Carve(storage, &off, f_bytes));
  a->qsum = reinterpret_cast<int32_t*>(Carve(storage, &off, f_bytes));
}

void PrepareActQ8K(int64_t m, int64_t k, std::vector<uint8_t>* storage, ActQ8K* a) {
  STET_CHECK(k % kQKK == 0);
  a->m = m;
  a->k = k;
  a->nsb = k / kQKK;
  const size_t qs_bytes = static_cast<size_t>(m * k);
  const size_t d_bytes = static_cast<size_t>(m * a->nsb) * 4;
  const size_t bs_bytes = static_cast<size_t>(m * a->nsb) * 16 * 2;
  Reserve(storage, qs_bytes + d_bytes + bs_bytes, 3);
  size_t off = 0;
  a->qs = reinterpret_cast<int8_t*>(Carve(storage, &off, qs_bytes));
  a->d = reinterpret_cast<float*>(Carve(storage, &off, d_bytes));
  a->bsums = reinterpret_cast<int16_t*>(Carve(storage, &off, bs_bytes));
}

void PrepareActPairs(int64_t m, int64_t k, std::vector<uint8_t>* storage, ActPairs* a) {
  a->m = m;
  a->k = k;
  a->chunks = (k + 7) / 8;
  a->pairs = (m + 1) / 2;
  const size_t bytes = static_cast<size_t>(a->pairs * a->chunks) * 16 * 4;
  Reserve(storage, bytes, 1);
  size_t off = 0;
  a->x2 = reinterpret_cast<float*>(Carve(storage, &off, bytes));
}

void PrepareActQ8V(int64_t m, int64_t nb, uint8_t flags, std::vector<uint8_t>* storage, ActQ8V* a) {
  a->m = m;
  a->nb = nb;
  a->groups = (m + 15) / 16;
  a->biased = (flags & kActBiased) != 0;
  const size_t n = static_cast<size_t>(a->groups * nb);
  const size_t qs_bytes = n * 512, v_bytes = n * 16 * 4;
  Reserve(storage, qs_bytes + 3 * v_bytes, 4);
  size_t off = 0;
  a->qs = Carve(storage, &off, qs_bytes);
  a->d = reinterpret_cast<float*>(Carve(storage, &off, v_bytes));
  const bool qsum = (flags & kActQsum) != 0, min = (flags & kActMinSum) != 0;
  a->qsum = qsum ? reinterpret_cast<int32_t*>(Carve(storage, &off, v_bytes)) : nullptr;
  a->s = min ? reinterpret_cast<float*>(Carve(storage, &off, v_bytes)) : nullptr;
}

void PrepareActQ8KV(int64_t m, int64_t nsb, uint8_t flags, std::vector<uint8_t>* storage,
                    ActQ8KV* a) {
  a->m = m;
  a->nsb = nsb;
  a->groups = (m + 15) / 16;
  a->biased = (flags & kActBiased) != 0;
  const bool sx = (flags & kActSubSums) != 0, sx16 = (flags & kActSums16) != 0;
  const size_t n = static_cast<size_t>(a->groups * nsb);
  const size_t qs_bytes = n * 4096, d_bytes = n * 16 * 4, sx_bytes = n * 4 * 32 * 2;
  Reserve(storage, qs_bytes + d_bytes + 2 * sx_bytes, 4);
  size_t off = 0;
  a->qs = reinterpret_cast<int8_t*>(Carve(storage, &off, qs_bytes));
  a->d = reinterpret_cast<float*>(Carve(storage, &off, d_bytes));
  a->sx = sx ? reinterpret_cast<int16_t*>(Carve(storage, &off, sx_bytes)) : nullptr;
  a->sx16 = sx16 ? reinterpret_cast<int16_t*>(Carve(storage, &off, 2 * sx_bytes)) : nullptr;
}

namespace {

// Runs fn(begin, end) over [0, n) on the pool when there is enough work to
// split. Activation rows are quantized and laid out independently of each
// other (R6), so the split never reaches a value.
void ParallelRows(ThreadPool* pool, int64_t n, FunctionRef<void(int64_t, int64_t)> fn) {
  if (pool == nullptr || pool->size() == 1 || n < 4) {
    fn(0, n);
    return;
  }
  pool->ParallelFor(n, 1, fn);
}

// View of rows [r0, r1) of a quantized activation.
ActQ8 RowsOf(const ActQ8& a, int64_t r0, int64_t r1) {
  ActQ8 v = a;
  v.m = r1 - r0;
  v.qs += r0 * a.nb_pad * kQK;
  v.d += r0 * a.nb_pad;
  v.s += r0 * a.nb_pad;
  v.qsum += r0 * a.nb_pad;
  return v;
}
ActQ8K RowsOf(const ActQ8K& a, int64_t r0, int64_t r1) {
  ActQ8K v = a;
  v.m = r1 - r0;
  v.qs += r0 * a.k;
  v.d += r0 * a.nsb;
  v.bsums += r0 * a.nsb * 16;
  if (v.sx2 != nullptr) v.sx2 += r0 * a.nsb * 4;
  return v;
}

// Quantizes the m rows of x (k each) into act with fn, threads splitting the rows.
template <typename Act>
void QuantizeRows(ThreadPool* pool, const float* x, int64_t k, Act* act,
                  void (*fn)(const float*, Act*)) {
  ParallelRows(pool, act->m, [&](int64_t r0, int64_t r1) {
    Act v = RowsOf(*act, r0, r1);
    fn(x + r0 * k, &v);
  });
}

// r = x - d * float(q) over one block of kBlock elements: one rounding for the
// product, one for the difference (no contraction), the scalar reference's
// formula; a constant trip count and unaliased pointers let the compiler
// vectorize it without changing a bit.
template <int kBlock>
void BlockResidual(const float* __restrict x, const int8_t* __restrict q, float d,
                   float* __restrict r) {
  for (int e = 0; e < kBlock; ++e) r[e] = x[e] - d * static_cast<float>(q[e]);
}

// r = x - row i of `a` dequantized: the rounding error of that row's int8 activation.
void RowResidual(const ActQ8& a, int64_t i, const float* x, float* r) {
  const int8_t* qs = a.qs + i * a.nb_pad * kQK;
  const float* d = a.d + i * a.nb_pad;
  for (int64_t b = 0; b < a.nb; ++b)
    BlockResidual<kQK>(x + b * kQK, qs + b * kQK, d[b], r + b * kQK);
}
void RowResidual(const ActQ8K& a, int64_t i, const float* x, float* r) {
  const int8_t* qs = a.qs + i * a.k;
  const float* d = a.d + i * a.nsb;
  for (int64_t b = 0; b < a.nsb; ++b)
    BlockResidual<kQKK>(x + b * kQKK, qs + b * kQKK, d[b], r + b * kQKK);
}

thread_local std::vector<float> tls_residual_rows;

// The refined activation of m rows of x: act (2m rows) gets x's row i quantized
// in row 2i and the residual r = x - (that quantization) quantized in row 2i + 1
// — the rows MatMul would make of x and ActResidual(x), with x quantized once,
// each x row beside its residual so that a kernel can add the two outputs as it
// stores them (MatMulArgs::sum_row_pairs).
template <typename Act>
void QuantizeRefined(ThreadPool* pool, const float* x, int64_t k, Act* act,
                     void (*fn)(const float*, Act*)) {
  const int64_t m = act->m / 2;
  ParallelRows(pool, m, [&](int64_t r0, int64_t r1) {
    if (tls_residual_rows.size() < static_cast<size_t>(k)) tls_residual_rows.resize(k);
    float* r = tls_residual_rows.data();
    for (int64_t i = r0; i < r1; ++i) {
      Act xi = RowsOf(*act, 2 * i, 2 * i + 1), ri = RowsOf(*act, 2 * i + 1, 2 * i + 2);
      fn(x + i * k, &xi);
      RowResidual(xi, 0, x + i * k, r);
      fn(r, &ri);
    }
  });
}

thread_local std::vector<uint8_t> tls_residual_storage;

// Fills a->sx2 (in storage) from the 16-element sums: a few hundred adds per
// row, once per call instead of in every 16-row group of the kernel.
void SubSumPairs(ActQ8K* a, std::vector<uint8_t>* storage) {
  const int64_t n = a->m * a->nsb * 4;
  Reserve(storage, static_cast<size_t>(n) * 4, 1);
  size_t off = 0;
  a->sx2 = reinterpret_cast<int32_t*>(Carve(storage, &off, static_cast<size_t>(n) * 4));
  for (int64_t i = 0; i < n; ++i) {
    const int16_t* bs = a->bsums + i * 4;
    a->sx2[i] = Int16Pair(bs[0] + bs[1], bs[2] + bs[3]);
  }
}

// The activation layouts of one call (the thread-local storage they point into
// outlives it).
struct Activations {
  ActQ8 a8;
  ActQ8K a8k;
  ActPairs xp;
  ActQ8V a8v;
  ActQ8KV a8kv;
};

bool Int8Layout(ActLayout a) {
  return a == ActLayout::kQ8 || a == ActLayout::kQ8V || a == ActLayout::kQ8K ||
         a == ActLayout::kQ8KV;
}

// Lays out x (m rows of w.cols) as row k reads it, quantizing with the SIMD path
// when `simd` (same bits as the scalar quantizer, R4); returns the row's arguments.
// `refine` (int8 layouts only): 2m rows, x's and its residual's (QuantizeRefined).
MatMulArgs Prepare(const MatMulKernel& k, const WeightView& w, const float* x, int64_t x_rows,
                   ThreadPool* pool, bool simd, bool refine, Activations* act) {
  STET_CHECK(!refine || Int8Layout(k.act));
  const int64_t m = refine ? 2 * x_rows : x_rows;
  MatMulArgs args{&w, x, nullptr, nullptr, m, nullptr};
  if (k.act == ActLayout::kQ8 || k.act == ActLayout::kQ8V) {
    STET_CHECK_MSG(w.cols % kQK == 0, "MatMul: 32-block weight with cols % 32 != 0");
    PrepareActQ8(m, w.cols, &tls_act_storage, &act->a8);
    if (refine) {
      QuantizeRefined(pool, x, w.cols, &act->a8, STET_PATH(simd, QuantizeActQ8));
    } else {
      QuantizeRows(pool, x, w.cols, &act->a8, STET_PATH(simd, QuantizeActQ8));
    }
    args.a8 = &act->a8;
  } else if (k.act == ActLayout::kQ8K || k.act == ActLayout::kQ8KV) {
    STET_CHECK_MSG(w.cols % kQKK == 0, "MatMul: K-quant weight with cols % 256 != 0");
    PrepareActQ8K(m, w.cols, &tls_act_storage, &act->a8k);
    if (refine) {
      QuantizeRefined(pool, x, w.cols, &act->a8k, STET_PATH(simd, QuantizeActQ8K));
    } else {
      QuantizeRows(pool, x, w.cols, &act->a8k, STET_PATH(simd, QuantizeActQ8K));
    }
    if (k.act == ActLayout::kQ8K && (k.act_flags & kActSubSums) != 0)
      SubSumPairs(&act->a8k, &tls_act_layout);
    args.a8k = &act->a8k;
  }
#if defined(STET_KERNELS_HAVE_AVX512)
  // The AVX-512 layouts of the same rows.
  if (k.act == ActLayout::kPairs) {
    PrepareActPairs(m, w.cols, &tls_act_layout, &act->xp);
    ParallelRows(pool, act->xp.pairs,
                 [&](int64_t p0, int64_t p1) { avx512::PairActivations(x, &act->xp, p0, p1); });
    args.xp = &act->xp;
  } else if (k.act == ActLayout::kQ8V) {
    PrepareActQ8V(m, act->a8.nb, k.act_flags, &tls_act_layout, &act->a8v);
    ParallelRows(pool, act->a8v.groups, [&](int64_t g0, int64_t g1) {
      avx512::VerticalizeQ8(act->a8, &act->a8v, g0, g1);
    });
    args.a8v = &act->a8v;
  } else if (k.act == ActLayout::kQ8KV) {
    PrepareActQ8KV(m, act->a8k.nsb, k.act_flags, &tls_act_layout, &act->a8kv);
    ParallelRows(pool, act->a8kv.groups, [&](int64_t g0, int64_t g1) {
      avx512::VerticalizeQ8K(act->a8k, &act->a8kv, g0, g1);
    });
    args.a8kv = &act->a8kv;
  }
#else
  STET_CHECK_MSG(
      k.act != ActLayout::kPairs && k.act != ActLayout::kQ8V && k.act != ActLayout::kQ8KV,
      "MatMul: an AVX-512 activation layout in a build without AVX-512");
#endif
  return args;
}

// A refined call's last step: row i < m of ys[j] = rows 2i + (2i + 1) of its 2m-row
// output — in the kernel's stores where it can (FusesRowPairs), else after it.
struct RefinedOut {
  float* const* ys;
  int64_t m;
  Isa isa;
};

// The AVX-512 vertical kernels add a refined call's row pairs as they store.
bool FusesRowPairs(const MatMulKernel& k) {
  return k.act == ActLayout::kQ8V || k.act == ActLayout::kQ8KV;
}

// Runs row k over every matrix of the group: threads take contiguous runs of
// 16-row units across the matrices (grain 16 keeps the AVX2 tiles and the packed
// 16-row groups whole; any split gives the same bits). With `refined`, each run
// also adds its rows' two outputs into the refined outputs (one rounding per
// element, as a separate Add would), or the kernel does as it stores them.
void RunRows(const MatMulKernel& k, const MatMulArgs& args, const WeightView* const* ws, int n,
             float* const* ys, int64_t total_rows, ThreadPool* pool,
             const RefinedOut* refined = nullptr) {
  constexpr int64_t kGrain = 16;
  const bool add_after = refined != nullptr && !args.sum_row_pairs;
  auto run = [&](const MatMulArgs& a, int j, int64_t r0, int64_t r1) {
    k.rows(a, r0, r1);
    if (!add_after) return;
    const int64_t rows = ws[j]->rows, m = refined->m;
    for (int64_t i = 0; i < m; ++i) {
      Add(a.y + 2 * i * rows + r0, a.y + (2 * i + 1) * rows + r0, r1 - r0,
          refined->ys[j] + i * rows + r0, refined->isa);
    }
  };
  MatMulArgs per[kMaxMatMulGroup];
  int64_t first_unit[kMaxMatMulGroup + 1] = {0};
  for (int j = 0; j < n; ++j) {
    per[j] = args;
    per[j].w = ws[j];
    per[j].y = ys[j];
    first_unit[j + 1] = first_unit[j] + (ws[j]->rows + kGrain - 1) / kGrain;
  }
  if (pool == nullptr || pool->size() == 1 || total_rows <= kGrain) {
    for (int j = 0; j < n; ++j) run(per[j], j, 0, ws[j]->rows);
    return;
  }
  pool->ParallelFor(first_unit[n], 1, [&](int64_t u0, int64_t u1) {
    for (int j = 0; j < n; ++j) {
      const int64_t a = u0 > first_unit[j] ? u0 : first_unit[j];
      const int64_t b = u1 < first_unit[j + 1] ? u1 : first_unit[j + 1];
      if (a >= b) continue;
      const int64_t r0 = (a - first_unit[j]) * kGrain;
      const int64_t r1 = std::min((b - first_unit[j]) * kGrain, ws[j]->rows);
      run(per[j], j, r0, r1);
    }
  });
}

// Checks a group: same type and K for all (else false: the caller splits it),
// sane shapes; sets whether every matrix has a packed copy and the rows in all.
bool Uniform(const WeightView* const* ws, int n, bool* packed, int64_t* total_rows) {
  *packed = true;
  *total_rows = 0;
  for (int j = 0; j < n; ++j) {
    STET_CHECK(ws[j]->rows >= 0 && ws[j]->cols >= 1);
    if (ws[j]->type != ws[0]->type || ws[j]->cols != ws[0]->cols) return false;
    *packed = *packed && ws[j]->packed != nullptr;
    *total_rows += ws[j]->rows;
  }
  return true;
}

}  // namespace

void MatMulWith(const MatMulKernel& k, const WeightView* const* ws, int n, const float* x,
                int64_t m, float* const* ys, ThreadPool* pool, Isa quant_isa) {
  STET_CHECK(n >= 1 && n <= kMaxMatMulGroup && m >= 0);
  bool packed;
  int64_t total_rows;
  STET_CHECK_MSG(Uniform(ws, n, &packed, &total_rows), "MatMulWith: one type and K per group");
  STET_CHECK_MSG(ws[0]->type == k.type, "MatMulWith: the row serves another weight type");
  STET_CHECK_MSG(packed || k.packed != Packed::kNeeds, "MatMulWith: the row needs packed weights");
  STET_CHECK_MSG(KernelRunsHere(k), "MatMulWith: the row's ISA does not run on this CPU");
  if (m == 0 || total_rows == 0) return;
  Activations act;
  const MatMulArgs args = Prepare(k, *ws[0], x, m, pool, UseSimd(quant_isa), false, &act);
  RunRows(k, args, ws, n, ys, total_rows, pool);
}

namespace {

// The row that serves a uniform group at `rows` activation rows under `isa`.
const MatMulKernel& Pick(const WeightView* const* ws, int64_t rows, bool packed, Isa isa) {
  const RowClass c = RowClassOf(rows);
  const MatMulKernel* k = isa == Isa::kAuto && ws[0]->plan != nullptr
                              ? ws[0]->plan->Pick(ws[0]->type, c, packed)
                              : FindKernel(ws[0]->type, isa, c, packed);
  STET_CHECK_MSG(k != nullptr, "MatMul: unsupported weight type (the loader must reject it)");
  return *k;
}

thread_local std::vector<float> tls_refined_y;

}  // namespace

void MatMulGroup(const WeightView* const* ws, int n, const float* x, int64_t m, float* const* ys,
                 ThreadPool* pool, Isa isa) {
  STET_CHECK(n >= 1 && n <= kMaxMatMulGroup && m >= 0);
  bool packed;
  int64_t total_rows;
  if (!Uniform(ws, n, &packed, &total_rows)) {
    // Mixed types (e.g. a q6_k attn_v among q4_k): one call per matrix.
    for (int i = 0; i < n; ++i) MatMulGroup(&ws[i], 1, x, m, &ys[i], pool, isa);
    return;
  }
  if (m == 0 || total_rows == 0) return;
  const bool simd = UseSimd(isa);  // checks that this CPU runs `isa`
  const MatMulKernel& k = Pick(ws, m, packed, isa);
  Activations act;
  const MatMulArgs args = Prepare(k, *ws[0], x, m, pool, simd, false, &act);
  RunRows(k, args, ws, n, ys, total_rows, pool);
}

void MatMulGroupRefined(const WeightView* const* ws, int n, const float* x, int64_t m,
                        float* const* ys, ThreadPool* pool, Isa isa) {
  STET_CHECK(n >= 1 && n <= kMaxMatMulGroup && m >= 0);
  bool packed;
  int64_t total_rows;
  if (!Uniform(ws, n, &packed, &total_rows)) {
    for (int i = 0; i < n; ++i) MatMulGroupRefined(&ws[i], 1, x, m, &ys[i], pool, isa);
    return;
  }
  if (ActQuantBlock(ws[0]->type) == 0) return MatMulGroup(ws, n, x, m, ys, pool, isa);
  if (m == 0 || total_rows == 0) return;
  const bool simd = UseSimd(isa);
  const MatMulKernel& k = Pick(ws, 2 * m, packed, isa);
  // Every row of a quantized type reads an int8 layout (pinned by the table
  // test's LayoutFits); Prepare checks it.
  Activations act;
  MatMulArgs args = Prepare(k, *ws[0], x, m, pool, simd, true, &act);
  const RefinedOut out{ys, m, isa};
  if (FusesRowPairs(k)) {
    args.sum_row_pairs = true;
    return RunRows(k, args, ws, n, ys, total_rows, pool, &out);
  }
  // The 2m-row outputs, one after another; each run adds its rows' pairs.
  float* y2[kMaxMatMulGroup];
  if (tls_refined_y.size() < static_cast<size_t>(2 * m * total_rows))
    tls_refined_y.resize(static_cast<size_t>(2 * m * total_rows));
  for (int64_t j = 0, at = 0; j < n; at += 2 * m * ws[j]->rows, ++j)
    y2[j] = tls_refined_y.data() + at;
  RunRows(k, args, ws, n, y2, total_rows, pool, &out);
}

void MatMul(const WeightView& w, const float* x, int64_t m, float* y, ThreadPool* pool, Isa isa) {
  const WeightView* ws[1] = {&w};
  float* ys[1] = {y};
  MatMulGroup(ws, 1, x, m, ys, pool, isa);
}

void ActResidual(DType t, const float* x, int64_t m, int64_t k, float* r, ThreadPool* pool,
                 Isa isa) {
  const int block = ActQuantBlock(t);
  STET_CHECK(block > 0 && k % block == 0);
  const bool simd = UseSimd(isa);
  ParallelRows(pool, m, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      if (block == kQK) {
        ActQ8 a;
        PrepareActQ8(1, k, &tls_residual_storage, &a);
        STET_PATH(simd, QuantizeActQ8)(x + i * k, &a);
        RowResidual(a, 0, x + i * k, r + i * k);
      } else {
        ActQ8K a;
        PrepareActQ8K(1, k, &tls_residual_storage, &a);
        STET_PATH(simd, QuantizeActQ8K)(x + i * k, &a);
        RowResidual(a, 0, x + i * k, r + i * k);
      }
    }
  });
}

}  // namespace stet::kernels
