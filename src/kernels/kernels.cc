// Dispatch of the public kernel API to the scalar reference (Isa::kScalar) or
// the AVX2 path (Isa::kAvx2), plus MatMul's driver: activation quantization
// once per call, before the parallel region, into per-thread scratch that only
// grows; threads then split w.rows only (rule R2), so no thread count or batch
// size can reach a reduction order.
#include <cstring>

#include "base/check.h"
#include "kernels/internal.h"

namespace stet::kernels {

namespace {

#if defined(STET_KERNELS_HAVE_AVX2)
constexpr bool kBuiltAvx2 = true;
#else
constexpr bool kBuiltAvx2 = false;
#endif

// True for Isa::kAvx2; aborts if this CPU or build cannot run it (a caller
// asking for a path it never checked is a programmer error).
bool UseAvx2(Isa isa) {
  if (isa == Isa::kScalar) return false;
  static const bool ok = kBuiltAvx2 && CpuHasAvx2Fma();
  STET_CHECK_MSG(ok, "Isa::kAvx2 requested on a CPU or build without AVX2+FMA+F16C");
  return true;
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

#if defined(STET_KERNELS_HAVE_AVX2)
#define STET_PATH(avx, fn) ((avx) ? avx2::fn : ref::fn)
#else
#define STET_PATH(avx, fn) ref::fn
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

void MatMul(const WeightView& w, const float* x, int64_t m, float* y, ThreadPool* pool, Isa isa) {
  STET_CHECK(m >= 0 && w.rows >= 0 && w.cols >= 1);
  if (m == 0 || w.rows == 0) return;
  const bool avx = UseAvx2(isa);
  MatMulArgs args{&w, x, nullptr, nullptr, m, y};
  ActQ8 a8;
  ActQ8K a8k;
  void (*rows_fn)(const MatMulArgs&, int64_t, int64_t) = nullptr;
  switch (w.type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      rows_fn = STET_PATH(avx, MatMulFloatRows);
      break;
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
      STET_CHECK_MSG(w.cols % kQK == 0, "MatMul: 32-block weight with cols % 32 != 0");
      PrepareActQ8(m, w.cols, &tls_act_storage, &a8);
      STET_PATH(avx, QuantizeActQ8)(x, &a8);
      args.a8 = &a8;
      rows_fn = STET_PATH(avx, MatMulQ8Rows);
      break;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      STET_CHECK_MSG(w.cols % kQKK == 0, "MatMul: K-quant weight with cols % 256 != 0");
      PrepareActQ8K(m, w.cols, &tls_act_storage, &a8k);
      STET_PATH(avx, QuantizeActQ8K)(x, &a8k);
      args.a8k = &a8k;
      rows_fn = STET_PATH(avx, MatMulQKRows);
      break;
    default:
      STET_CHECK_MSG(false, "MatMul: unsupported weight type (the loader must reject it)");
  }
  // Grain 16 keeps the AVX2 path's row tiles whole; any split gives the same bits.
  constexpr int64_t kGrain = 16;
  if (pool == nullptr || pool->size() == 1 || w.rows <= kGrain) {
    rows_fn(args, 0, w.rows);
    return;
  }
  pool->ParallelFor(w.rows, kGrain, [&](int64_t r0, int64_t r1) { rows_fn(args, r0, r1); });
}

float Dot(const float* a, const float* b, int64_t n, Isa isa) {
  return STET_PATH(UseAvx2(isa), Dot)(a, b, n);
}

void RmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* y, Isa isa) {
  STET_PATH(UseAvx2(isa), RmsNorm)(x, w, m, n, eps, y);
}

void SwiGlu(const float* gate, const float* up, int64_t n, float* out, Isa isa) {
  STET_PATH(UseAvx2(isa), SwiGlu)(gate, up, n, out);
}

void Add(const float* a, const float* b, int64_t n, float* out, Isa isa) {
  STET_PATH(UseAvx2(isa), Add)(a, b, n, out);
}

void Rope(float* x, int n_heads, int head_dim, int rot_dim, const float* cos, const float* sin,
          RopeStyle style, Isa isa) {
  STET_CHECK(rot_dim >= 0 && rot_dim % 2 == 0 && rot_dim <= head_dim);
  STET_PATH(UseAvx2(isa), Rope)(x, n_heads, head_dim, rot_dim, cos, sin, style);
}

void StoreRow(const float* x, int64_t n, DType dst_type, void* dst, Isa isa) {
  STET_PATH(UseAvx2(isa), StoreRow)(x, n, dst_type, dst);
}

void AttendHead(const float* q, const void* k, const void* v, DType kv_type,
                int64_t kv_stride_bytes, int64_t n_kv, int head_dim, float scale, float* out,
                float* scratch, Isa isa) {
  STET_PATH(UseAvx2(isa), AttendHead)
  (q, k, v, kv_type, kv_stride_bytes, n_kv, head_dim, scale, out, scratch);
}

}  // namespace stet::kernels
