// Dispatch of the public kernel API (but MatMul, matmul.cc) to the scalar reference
// (Isa::kScalar), the AVX2/AVX-512 paths (x86-64 builds) or the NEON path (aarch64
// builds), on the explicit Isa and the shape only — never in a way that changes a bit.
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

}  // namespace

bool UseSimd(Isa isa) {
  isa = ResolveIsa(isa);
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

namespace {

// True for Isa::kAvx512 (checked by UseSimd as above).
bool UseAvx512(Isa isa) { return UseSimd(isa) && ResolveIsa(isa) == Isa::kAvx512; }

}  // namespace

int ActQuantBlock(DType t) {
  switch (GetDTypeTraits(static_cast<uint32_t>(t))->act) {
    case ActFormat::kQ8:
      return kQK;
    case ActFormat::kQ8K:
      return kQKK;
    default:
      return 0;
  }
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

bool AttendStepsHaveSimd(Isa isa, int head_dim) {
  return kBuiltAvx2 && head_dim % 8 == 0 && UseSimd(isa);
}

void AttendScores(const float* const* qs, int nq, const KvRows& k, DType kv_type, int64_t t0,
                  int64_t t1, int head_dim, float scale, float* const* s, Isa isa) {
  STET_CHECK(nq >= 1 && nq <= kMaxAttendQueries && t0 >= 0 && t0 <= t1);
#if defined(STET_KERNELS_HAVE_AVX512)
  if (UseAvx512(isa) && head_dim % 8 == 0) {
    return avx512::AttendScores(qs, nq, k, kv_type, t0, t1, head_dim, scale, s);
  }
#endif
#if defined(STET_KERNELS_HAVE_AVX2)
  if (UseSimd(isa) && head_dim % 8 == 0) {
    return avx2::AttendScores(qs, nq, k, kv_type, t0, t1, head_dim, scale, s);
  }
#endif
  (void)isa;
  ref::AttendScores(qs, nq, k, kv_type, t0, t1, head_dim, scale, s);
}

float AttendSoftmax(float* s, int64_t n, float softcap, Isa isa) {
  STET_CHECK(n > 0);
#if defined(STET_KERNELS_HAVE_AVX2)
  if (UseSimd(isa)) {
    SoftCap(s, n, softcap);
    return avx2::Softmax(s, n);
  }
#endif
  (void)isa;
  return ref::AttendSoftmax(s, n, softcap);
}

void AttendValues(const float* const* e, const float* den, int nq, const KvRows& v, DType kv_type,
                  int64_t n, int j0, int j1, int head_dim, float* const* out, Isa isa) {
  STET_CHECK(nq >= 1 && n > 0 && j0 >= 0 && j0 % 16 == 0 && j1 <= head_dim &&
             (j1 % 16 == 0 || j1 == head_dim) && j0 < j1);
#if defined(STET_KERNELS_HAVE_AVX512)
  if (UseAvx512(isa) && head_dim % 8 == 0) {
    return avx512::AttendValues(e, den, nq, v, kv_type, n, j0, j1, head_dim, out);
  }
#endif
#if defined(STET_KERNELS_HAVE_AVX2)
  if (UseSimd(isa) && head_dim % 8 == 0) {
    return avx2::AttendValues(e, den, nq, v, kv_type, n, j0, j1, head_dim, out);
  }
#endif
  (void)isa;
  ref::AttendValues(e, den, nq, v, kv_type, n, j0, j1, out);
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
#if defined(STET_KERNELS_HAVE_AVX512)
  if (pairs512 && head_dim % 8 == 0) {  // four queries a pass: half the K/V widening per fma
    for (; i + 3 < nq; i += 4) {
      avx512::AttendHeadQuad(qs + i, k, v, kv_type, n_kv + i, head_dim, scale, softcap, outs + i,
                             scratch);
    }
  }
#endif
  for (; i + 1 < nq; i += 2) {
    AttendHeadPair(qs[i], qs[i + 1], k, v, kv_type, n_kv[i], n_kv[i + 1], head_dim, scale, softcap,
                   outs[i], outs[i + 1], scratch, isa);
  }
  if (i < nq) {
    AttendHead(qs[i], k, v, kv_type, n_kv[i], head_dim, scale, softcap, outs[i], scratch, isa);
  }
}

}  // namespace stet::kernels
