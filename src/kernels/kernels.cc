// Dispatch of the public kernel API to the scalar reference (Isa::kScalar), the
// AVX2/AVX-512 paths (x86-64 builds) or the NEON path (aarch64 builds), plus MatMul's driver:
// activation quantization once per call, before the parallel region, into per-thread scratch that
// only grows; threads then split w.rows only (rule R2), so no thread count or batch size can reach
// a reduction order.
#include <cstring>

#include "base/check.h"
#include "base/thread_pool.h"
#include "kernels/internal.h"

namespace stet::kernels {

namespace {

#if defined(STET_KERNELS_HAVE_AVX2)
constexpr bool kBuiltAvx2 = true;
#else
constexpr bool kBuiltAvx2 = false;
#endif

#if defined(STET_KERNELS_HAVE_AVX512)
constexpr bool kBuiltAvx512 = true;
#else
constexpr bool kBuiltAvx512 = false;
#endif

#if defined(STET_KERNELS_HAVE_NEON)
constexpr bool kBuiltNeon = true;
#else
constexpr bool kBuiltNeon = false;
#endif

// True for the build's SIMD path: Isa::kAvx2 and kAvx512 (which uses the AVX2
// path for the kernels it has no AVX-512 version of) on x86-64, kNeon on
// aarch64; aborts if this CPU or build cannot run it (a caller asking for a path
// it never checked is a programmer error).
bool UseSimd(Isa isa) {
  if (isa == Isa::kScalar) return false;
  if (isa == Isa::kNeon) {
    static const bool ok_neon = kBuiltNeon && CpuHasNeon();
    STET_CHECK_MSG(ok_neon, "Isa::kNeon requested on a CPU or build without NEON");
    return true;
  }
  static const bool ok = kBuiltAvx2 && CpuHasAvx2Fma();
  STET_CHECK_MSG(ok, "Isa::kAvx2 requested on a CPU or build without AVX2+FMA+F16C");
  if (isa == Isa::kAvx512) {
    static const bool ok512 = kBuiltAvx512 && CpuHasAvx512();
    STET_CHECK_MSG(ok512, "Isa::kAvx512 requested on a CPU or build without AVX-512 VNNI");
  }
  return true;
}

// True for Isa::kAvx512 (checked by UseSimd as above).
bool UseAvx512(Isa isa) { return UseSimd(isa) && isa == Isa::kAvx512; }

// The AVX-512 float kernels serve batches from 2 rows. For quantized weights
// with an AVX-512 packed kernel, up to kAvx512MinQuantRows - 1 rows stream the
// packed matrix through it (each weight load feeds up to four rows; the
// vertical kernels would leave most of their 16 lanes idle), and from 16 rows
// the vertical kernels lead (on a Xeon, AVX-512 VNNI, 2048x2048 q8_0: 36 vs
// 21.5 GMAC/s for the AVX2 tiles). Types without one use the AVX2 tiles below 16.
constexpr int64_t kAvx512MinRows = 2;
constexpr int64_t kAvx512MinQuantRows = 16;

// Every weight type has an AVX-512 batched kernel. These quantized types also
// have an AVX-512 decode kernel for their packed layout; a packed q6_k decodes
// with the AVX2 packed kernel (floats: the AVX2 one for m = 1).
bool HasAvx512Packed(DType t) {
  switch (t) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ4_K:
      return true;
    default:
      return false;
  }
}

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

// A build has one SIMD family: AVX2 (x86-64) or NEON (aarch64).
#if defined(STET_KERNELS_HAVE_AVX2)
#define STET_PATH(simd, fn) ((simd) ? avx2::fn : ref::fn)
#elif defined(STET_KERNELS_HAVE_NEON)
#define STET_PATH(simd, fn) ((simd) ? neon::fn : ref::fn)
#else
#define STET_PATH(simd, fn) ref::fn
#endif

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

void PrepareActQ8V(int64_t m, int64_t nb, DType w_type, std::vector<uint8_t>* storage, ActQ8V* a) {
  a->m = m;
  a->nb = nb;
  a->groups = (m + 15) / 16;
  a->biased = w_type == DType::kQ8_0 || w_type == DType::kIQ4_NL;  // signed weights
  const size_t n = static_cast<size_t>(a->groups * nb);
  const size_t qs_bytes = n * 512, v_bytes = n * 16 * 4;
  Reserve(storage, qs_bytes + 3 * v_bytes, 4);
  size_t off = 0;
  a->qs = Carve(storage, &off, qs_bytes);
  a->d = reinterpret_cast<float*>(Carve(storage, &off, v_bytes));
  const bool offset = w_type == DType::kQ4_0 || w_type == DType::kQ5_0;  // q - 8, q - 16
  const bool min = w_type == DType::kQ4_1 || w_type == DType::kQ5_1;
  a->qsum = offset ? reinterpret_cast<int32_t*>(Carve(storage, &off, v_bytes)) : nullptr;
  a->s = min ? reinterpret_cast<float*>(Carve(storage, &off, v_bytes)) : nullptr;
}

void PrepareActQ8KV(int64_t m, int64_t nsb, DType w_type, std::vector<uint8_t>* storage,
                    ActQ8KV* a) {
  a->m = m;
  a->nsb = nsb;
  a->groups = (m + 15) / 16;
  a->biased = w_type != DType::kQ4_K;
  const bool sx = w_type == DType::kQ4_K;
  const bool sx16 = w_type == DType::kQ2_K || w_type == DType::kQ5_K;
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
  return v;
}

}  // namespace

void MatMulGroup(const WeightView* const* ws, int n, const float* x, int64_t m, float* const* ys,
                 ThreadPool* pool, Isa isa) {
  STET_CHECK(n >= 1 && n <= kMaxMatMulGroup && m >= 0);
  const WeightView& w = *ws[0];
  bool packed = true;
  int64_t total_rows = 0;
  for (int j = 0; j < n; ++j) {
    STET_CHECK(ws[j]->rows >= 0 && ws[j]->cols >= 1);
    if (ws[j]->type != w.type || ws[j]->cols != w.cols) {
      // Mixed types (e.g. a q6_k attn_v among q4_k): one call per matrix.
      for (int i = 0; i < n; ++i) MatMulGroup(&ws[i], 1, x, m, &ys[i], pool, isa);
      return;
    }
    packed = packed && ws[j]->packed != nullptr;
    total_rows += ws[j]->rows;
  }
  if (m == 0 || total_rows == 0) return;
  const bool avx = UseSimd(isa);
  MatMulArgs args{&w, x, nullptr, nullptr, m, ys[0]};
  // The AVX-512 kernels: packed decode for few rows, vertical/paired layouts
  // for batches.
  const bool is_float = w.type == DType::kF32 || w.type == DType::kF16 || w.type == DType::kBF16;
  const bool packed512 =
      UseAvx512(isa) && packed && m < kAvx512MinQuantRows && HasAvx512Packed(w.type);
  const bool avx512 = UseAvx512(isa) && m >= (is_float ? kAvx512MinRows : kAvx512MinQuantRows);
  // The AVX2 packed kernels serve every m (each weight load feeds up to four
  // activation rows), on AVX2 CPUs and for what the AVX-512 kernels lack.
  [[maybe_unused]] const bool packed2 = avx && packed && !packed512 && !avx512;
  ActQ8 a8;
  ActQ8K a8k;
  ActPairs xp;
  ActQ8V a8v;
  ActQ8KV a8kv;
  void (*rows_fn)(const MatMulArgs&, int64_t, int64_t) = nullptr;
  switch (w.type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      rows_fn = STET_PATH(avx, MatMulFloatRows);
#if defined(STET_KERNELS_HAVE_AVX512)
      if (avx512) {
        PrepareActPairs(m, w.cols, &tls_act_layout, &xp);
        ParallelRows(pool, xp.pairs,
                     [&](int64_t p0, int64_t p1) { avx512::PairActivations(x, &xp, p0, p1); });
        args.xp = &xp;
        rows_fn = avx512::MatMulFloatRows;
      }
#endif
      break;
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL:
      STET_CHECK_MSG(w.cols % kQK == 0, "MatMul: 32-block weight with cols % 32 != 0");
      PrepareActQ8(m, w.cols, &tls_act_storage, &a8);
      ParallelRows(pool, m, [&](int64_t r0, int64_t r1) {
        ActQ8 v = RowsOf(a8, r0, r1);
        STET_PATH(avx, QuantizeActQ8)(x + r0 * w.cols, &v);
      });
      args.a8 = &a8;
      rows_fn = STET_PATH(avx, MatMulQ8Rows);
#if defined(STET_KERNELS_HAVE_AVX2)
      if (packed2) rows_fn = avx2::MatMulPackedRows;
#endif
#if defined(STET_KERNELS_HAVE_AVX512)
      if (packed512) {
        rows_fn = avx512::MatMulPackedRows;
      } else if (avx512) {
        PrepareActQ8V(m, a8.nb, w.type, &tls_act_layout, &a8v);
        ParallelRows(pool, a8v.groups,
                     [&](int64_t g0, int64_t g1) { avx512::VerticalizeQ8(a8, &a8v, g0, g1); });
        args.a8v = &a8v;
        rows_fn = avx512::MatMulQ8Rows;
      }
#endif
      break;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS:
      STET_CHECK_MSG(w.cols % kQKK == 0, "MatMul: K-quant weight with cols % 256 != 0");
      PrepareActQ8K(m, w.cols, &tls_act_storage, &a8k);
      ParallelRows(pool, m, [&](int64_t r0, int64_t r1) {
        ActQ8K v = RowsOf(a8k, r0, r1);
        STET_PATH(avx, QuantizeActQ8K)(x + r0 * w.cols, &v);
      });
      args.a8k = &a8k;
      rows_fn = STET_PATH(avx, MatMulQKRows);
#if defined(STET_KERNELS_HAVE_AVX2)
      if (packed2 && w.type != DType::kQ5_K) rows_fn = avx2::MatMulPackedQKRows;
#endif
#if defined(STET_KERNELS_HAVE_AVX512)
      if (packed512) {
        rows_fn = avx512::MatMulPackedQKRows;
      } else if (avx512) {
        PrepareActQ8KV(m, a8k.nsb, w.type, &tls_act_layout, &a8kv);
        ParallelRows(pool, a8kv.groups,
                     [&](int64_t g0, int64_t g1) { avx512::VerticalizeQ8K(a8k, &a8kv, g0, g1); });
        args.a8kv = &a8kv;
        rows_fn = w.type == DType::kQ4_K ? avx512::MatMulQKRows : avx512::MatMulQKUnpackedRows;
      }
#endif
      break;
    default:
      STET_CHECK_MSG(false, "MatMul: unsupported weight type (the loader must reject it)");
  }
  // Grain 16 keeps the AVX2 path's row tiles and the packed 16-row groups
  // whole; any split gives the same bits.
  constexpr int64_t kGrain = 16;
  MatMulArgs per[kMaxMatMulGroup];
  int64_t first_unit[kMaxMatMulGroup + 1] = {0};
  for (int j = 0; j < n; ++j) {
    per[j] = args;
    per[j].w = ws[j];
    per[j].y = ys[j];
    first_unit[j + 1] = first_unit[j] + (ws[j]->rows + kGrain - 1) / kGrain;
  }
  if (pool == nullptr || pool->size() == 1 || total_rows <= kGrain) {
    for (int j = 0; j < n; ++j) rows_fn(per[j], 0, ws[j]->rows);
    return;
  }
  // Threads take contiguous runs of 16-row units across the matrices.
  pool->ParallelFor(first_unit[n], 1, [&](int64_t u0, int64_t u1) {
    for (int j = 0; j < n; ++j) {
      const int64_t a = u0 > first_unit[j] ? u0 : first_unit[j];
      const int64_t b = u1 < first_unit[j + 1] ? u1 : first_unit[j + 1];
      if (a >= b) continue;
      const int64_t r0 = (a - first_unit[j]) * kGrain;
      const int64_t r1 =
          (b - first_unit[j]) * kGrain < ws[j]->rows ? (b - first_unit[j]) * kGrain : ws[j]->rows;
      rows_fn(per[j], r0, r1);
    }
  });
}

void MatMul(const WeightView& w, const float* x, int64_t m, float* y, ThreadPool* pool, Isa isa) {
  const WeightView* ws[1] = {&w};
  float* ys[1] = {y};
  MatMulGroup(ws, 1, x, m, ys, pool, isa);
}

int ActQuantBlock(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return 0;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS:
      return kQKK;
    default:
      return kQK;
  }
}

void ActResidual(DType t, const float* x, int64_t m, int64_t k, float* r) {
  const int block = ActQuantBlock(t);
  STET_CHECK(block > 0 && k % block == 0);
  ref::ActResidual(x, m, k, block, r);
}

float Dot(const float* a, const float* b, int64_t n, Isa isa) {
  return STET_PATH(UseSimd(isa), Dot)(a, b, n);
}

void RmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* y, Isa isa) {
  STET_PATH(UseSimd(isa), RmsNorm)(x, w, m, n, eps, y);
}

void SwiGlu(const float* gate, const float* up, int64_t n, float* out, Isa isa) {
  STET_PATH(UseSimd(isa), SwiGlu)(gate, up, n, out);
}

void GeGlu(const float* gate, const float* up, int64_t n, float* out, Isa isa) {
  STET_PATH(UseSimd(isa), GeGlu)(gate, up, n, out);
}

float SumExpShifted(const float* x, int64_t n, float shift, Isa isa) {
  return STET_PATH(UseSimd(isa), SumExpShifted)(x, n, shift);
}

int64_t Argmax(const float* x, int64_t n, Isa isa) { return STET_PATH(UseSimd(isa), Argmax)(x, n); }

void Add(const float* a, const float* b, int64_t n, float* out, Isa isa) {
  STET_PATH(UseSimd(isa), Add)(a, b, n, out);
}

void Rope(float* x, int n_heads, int head_dim, int rot_dim, const float* cos, const float* sin,
          RopeStyle style, Isa isa) {
  STET_CHECK(rot_dim >= 0 && rot_dim % 2 == 0 && rot_dim <= head_dim);
  STET_PATH(UseSimd(isa), Rope)(x, n_heads, head_dim, rot_dim, cos, sin, style);
}

void StoreRow(const float* x, int64_t n, DType dst_type, void* dst, Isa isa) {
  STET_PATH(UseSimd(isa), StoreRow)(x, n, dst_type, dst);
}

void AttendHead(const float* q, const KvRows& k, const KvRows& v, DType kv_type, int64_t n_kv,
                int head_dim, float scale, float softcap, float* out, float* scratch, Isa isa) {
  STET_PATH(UseSimd(isa), AttendHead)
  (q, k, v, kv_type, n_kv, head_dim, scale, softcap, out, scratch);
}

void AttendHeadPair(const float* q0, const float* q1, const KvRows& k, const KvRows& v,
                    DType kv_type, int64_t n_kv0, int64_t n_kv1, int head_dim, float scale,
                    float softcap, float* out0, float* out1, float* scratch, Isa isa) {
#if defined(STET_KERNELS_HAVE_AVX512)
  if (UseAvx512(isa) && head_dim % 8 == 0) {
    avx512::AttendHeadPair(q0, q1, k, v, kv_type, n_kv0, n_kv1, head_dim, scale, softcap, out0,
                           out1, scratch);
    return;
  }
#endif
#if defined(STET_KERNELS_HAVE_AVX2)
  if (UseSimd(isa) && head_dim % 8 == 0) {
    avx2::AttendHeadPair(q0, q1, k, v, kv_type, n_kv0, n_kv1, head_dim, scale, softcap, out0, out1,
                         scratch);
    return;
  }
#endif
  AttendHead(q0, k, v, kv_type, n_kv0, head_dim, scale, softcap, out0, scratch, isa);
  AttendHead(q1, k, v, kv_type, n_kv1, head_dim, scale, softcap, out1, scratch, isa);
}

namespace {
constexpr int64_t kAvx512PairMaxKv = 512;
}  // namespace

int64_t AttendHeadsScratch(int nq, int64_t n_max, int head_dim) {
  const int64_t per = (n_max + 7) / 8 * 8 + head_dim;  // scores + accumulators (or a pair's)
  return (nq < 2 ? 2 : nq) * per;
}

void AttendHeads(const float* const* qs, const int64_t* n_kv, int nq, const KvRows& k,
                 const KvRows& v, DType kv_type, int head_dim, float scale, float softcap,
                 float* const* outs, float* scratch, Isa isa) {
  STET_CHECK(nq >= 1 && nq <= kMaxAttendQueries);
  int64_t n_max = 0;
  for (int i = 0; i < nq; ++i) n_max = n_kv[i] > n_max ? n_kv[i] : n_max;
  // On AVX-512 the paired 16-lane kernel leads while the K/V rows stay in
  // cache between pairs; past kAvx512PairMaxKv positions the blocked AVX2 pass
  // (one read of the context for every query) wins.
  [[maybe_unused]] const bool pairs512 = UseAvx512(isa) && n_max <= kAvx512PairMaxKv;
#if defined(STET_KERNELS_HAVE_AVX2)
  if (UseSimd(isa) && head_dim % 8 == 0 && !pairs512) {
    avx2::AttendHeads(qs, n_kv, nq, k, v, kv_type, head_dim, scale, softcap, outs, scratch);
    return;
  }
#endif
  int i = 0;
  for (; i + 1 < nq; i += 2) {
    AttendHeadPair(qs[i], qs[i + 1], k, v, kv_type, n_kv[i], n_kv[i + 1], head_dim, scale, softcap,
                   outs[i], outs[i + 1], scratch, isa);
  }
  if (i < nq) {
    AttendHead(qs[i], k, v, kv_type, n_kv[i], head_dim, scale, softcap, outs[i], scratch, isa);
  }
}

}  // namespace stet::kernels
