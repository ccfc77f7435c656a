// AVX2 AttendHead. Numerics, as ref/attend_head.cc and bit-equal to it: s_t =
// Dot8(q, k_t) * scale (four positions in flight, each its own 8-lane chain);
// max; e_t = ExpF8(s_t - max) (ExpF for the tail); denominator = 8-lane sum of
// e_t, lane t%8; out[d] = fma(e_t, v_t[d], out[d]) for t = 0, 1, ..., then / den.
// Depends on n_kv and head_dim only, not on the cache's layout (K/V rows are
// walked run by run through kv_rows.h; attend_head_test.cc). AttendHeadPair:
// two queries share every K/V load, each computed exactly as above. Softmax is shared
// with the AVX-512 paired kernel.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/cpu/avx2_util.h"
#include "kernels/internal.h"
#include "numerics/math_avx2.h"

namespace stet::kernels::avx2 {

namespace {

// Eight K/V values from element j of a row (f32 or f16), widened exactly.
template <DType T>
inline __m256 Load8(const uint8_t* row, int j) {
  if constexpr (T == DType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + j);
  } else {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * j)));
  }
}

// The last n < 8 values from element j, zero-padded.
template <DType T>
inline __m256 LoadTail(const uint8_t* row, int j, int n) {
  constexpr int kBytes = T == DType::kF32 ? 4 : 2;
  alignas(32) uint8_t tmp[32] = {};
  std::memcpy(tmp, row + j * kBytes, static_cast<size_t>(n) * kBytes);
  return Load8<T>(tmp, 0);
}

template <DType T, int NT>
inline void Scores(const float* q, const uint8_t* k, int64_t stride, int head_dim, float scale,
                   float* s) {
  __m256 acc[NT];
  STET_UNROLL
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  int j = 0;
  for (; j + 8 <= head_dim; j += 8) {
    const __m256 qv = _mm256_loadu_ps(q + j);
    STET_UNROLL
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_fmadd_ps(qv, Load8<T>(k + t * stride, j), acc[t]);
  }
  if (j < head_dim) {
    const __m256i mask = TailMask(head_dim - j);
    const __m256 qv = _mm256_maskload_ps(q + j, mask);
    STET_UNROLL
    for (int t = 0; t < NT; ++t) {
      const __m256 next = _mm256_fmadd_ps(qv, LoadTail<T>(k + t * stride, j, head_dim - j), acc[t]);
      acc[t] = _mm256_blendv_ps(acc[t], next, _mm256_castsi256_ps(mask));
    }
  }
  STET_UNROLL
  for (int t = 0; t < NT; ++t) s[t] = CombineLanes8(acc[t]) * scale;
}

// out[j0 .. j0 + 8*NV) (the last vector may be partial: `last` real lanes).
// Positions in increasing t, run by run; the accumulators live across runs.
template <DType T, int NV>
inline void Accumulate(const KvRows& v, int64_t n_kv, const float* e, int j0, int last,
                       float denominator, float* out) {
  __m256 acc[NV];
  STET_UNROLL
  for (int i = 0; i < NV; ++i) acc[i] = _mm256_setzero_ps();
  const int64_t stride = v.row_stride;
  for (int64_t t0 = 0, len = 0; t0 < n_kv; t0 += len) {
    const uint8_t* vr = v.RunAt(t0, n_kv, &len);
    for (int64_t t = 0; t < len; ++t) {
      const __m256 et = _mm256_set1_ps(e[t0 + t]);
      const uint8_t* vt = vr + t * stride;
      STET_UNROLL
      for (int i = 0; i < NV; ++i) {
        const bool partial = i == NV - 1 && last < 8;
        const __m256 vv = partial ? LoadTail<T>(vt, j0 + 8 * i, last) : Load8<T>(vt, j0 + 8 * i);
        acc[i] = _mm256_fmadd_ps(et, vv, acc[i]);
      }
    }
  }
  const __m256 den = _mm256_set1_ps(denominator);
  STET_UNROLL
  for (int i = 0; i < NV; ++i) {
    const __m256 r = _mm256_div_ps(acc[i], den);
    if (i == NV - 1 && last < 8) {
      _mm256_maskstore_ps(out + j0 + 8 * i, TailMask(last), r);
    } else {
      _mm256_storeu_ps(out + j0 + 8 * i, r);
    }
  }
}

template <DType T>
void Attend(const float* q, const KvRows& k, const KvRows& v, int64_t n_kv, int head_dim,
            float scale, float softcap, float* out, float* scratch) {
  // Scores are independent per position: four at a time within each run.
  const int64_t stride = k.row_stride;
  for (int64_t t0 = 0, len = 0; t0 < n_kv; t0 += len) {
    const uint8_t* kr = k.RunAt(t0, n_kv, &len);
    int64_t t = 0;
    for (; t + 4 <= len; t += 4)
      Scores<T, 4>(q, kr + t * stride, stride, head_dim, scale, scratch + t0 + t);
    for (; t < len; ++t) Scores<T, 1>(q, kr + t * stride, stride, head_dim, scale, scratch + t0 + t);
  }

  SoftCap(scratch, n_kv, softcap);
  const float denominator = Softmax(scratch, n_kv);

  // Chunks of up to 8 vectors (64 dims) stay in registers across all t.
  int j0 = 0;
  while (j0 < head_dim) {
    const int rest = head_dim - j0;
    if (rest >= 64) {
      Accumulate<T, 8>(v, n_kv, scratch, j0, 8, denominator, out);
      j0 += 64;
      continue;
    }
    const int nv = (rest + 7) / 8, last = rest - 8 * (nv - 1);
    WithCount<8>(nv, [&](auto n) {
      Accumulate<T, decltype(n)::value>(v, n_kv, scratch, j0, last, denominator, out);
    });
    j0 = head_dim;
  }
}

// Pair kernels (head_dim % 8 == 0): two queries over the same K/V rows, each
// K/V vector loaded once for both; per query exactly the single kernel's ops.
template <DType T, int NT>
inline void Scores2(const float* q0, const float* q1, const uint8_t* k, int64_t stride,
                    int head_dim, float scale, float* s0, float* s1) {
  __m256 a0[NT], a1[NT];
  STET_UNROLL
  for (int t = 0; t < NT; ++t) a0[t] = a1[t] = _mm256_setzero_ps();
  for (int j = 0; j < head_dim; j += 8) {
    const __m256 x0 = _mm256_loadu_ps(q0 + j), x1 = _mm256_loadu_ps(q1 + j);
    STET_UNROLL
    for (int t = 0; t < NT; ++t) {
      const __m256 kv = Load8<T>(k + t * stride, j);
      a0[t] = _mm256_fmadd_ps(x0, kv, a0[t]);
      a1[t] = _mm256_fmadd_ps(x1, kv, a1[t]);
    }
  }
  STET_UNROLL
  for (int t = 0; t < NT; ++t) {
    s0[t] = CombineLanes8(a0[t]) * scale;
    s1[t] = CombineLanes8(a1[t]) * scale;
  }
}

// Output dims [j0, j0 + 8 * NV) of both queries: positions below min(n0, n1)
// feed both, the rest only the longer query.
template <DType T, int NV>
inline void Accumulate2(const KvRows& v, int64_t n0, int64_t n1, const float* e0, const float* e1,
                        int j0, float den0, float den1, float* out0, float* out1) {
  __m256 a0[NV], a1[NV];
  STET_UNROLL
  for (int i = 0; i < NV; ++i) a0[i] = a1[i] = _mm256_setzero_ps();
  const int64_t n_min = n0 < n1 ? n0 : n1, n_max = n0 < n1 ? n1 : n0;
  const int64_t stride = v.row_stride;
  for (int64_t t0 = 0, len = 0; t0 < n_max; t0 += len) {
    const uint8_t* vr = v.RunAt(t0, n_max, &len) - t0 * stride;  // position t: vr + t * stride
    const int64_t end = t0 + len;
    int64_t t = t0;
    for (; t < (end < n_min ? end : n_min); ++t) {
      const __m256 x0 = _mm256_set1_ps(e0[t]), x1 = _mm256_set1_ps(e1[t]);
      const uint8_t* vt = vr + t * stride;
      STET_UNROLL
      for (int i = 0; i < NV; ++i) {
        const __m256 vv = Load8<T>(vt, j0 + 8 * i);
        a0[i] = _mm256_fmadd_ps(x0, vv, a0[i]);
        a1[i] = _mm256_fmadd_ps(x1, vv, a1[i]);
      }
    }
    if (t < end) {
      __m256* acc = n0 > n1 ? a0 : a1;
      const float* e = n0 > n1 ? e0 : e1;
      for (; t < end; ++t) {
        const __m256 x = _mm256_set1_ps(e[t]);
        const uint8_t* vt = vr + t * stride;
        STET_UNROLL
        for (int i = 0; i < NV; ++i) acc[i] = _mm256_fmadd_ps(x, Load8<T>(vt, j0 + 8 * i), acc[i]);
      }
    }
  }
  const __m256 d0 = _mm256_set1_ps(den0), d1 = _mm256_set1_ps(den1);
  STET_UNROLL
  for (int i = 0; i < NV; ++i) {
    _mm256_storeu_ps(out0 + j0 + 8 * i, _mm256_div_ps(a0[i], d0));
    _mm256_storeu_ps(out1 + j0 + 8 * i, _mm256_div_ps(a1[i], d1));
  }
}

template <DType T>
void Pair(const float* q0, const float* q1, const KvRows& k, const KvRows& v, int64_t n0,
          int64_t n1, int head_dim, float scale, float softcap, float* out0, float* out1,
          float* scratch) {
  const int64_t n_max = n0 < n1 ? n1 : n0;
  float* s0 = scratch;
  float* s1 = scratch + n_max;
  const int64_t stride = k.row_stride;
  for (int64_t t0 = 0, len = 0; t0 < n_max; t0 += len) {
    const uint8_t* kr = k.RunAt(t0, n_max, &len);
    int64_t t = 0;
    for (; t + 4 <= len; t += 4)
      Scores2<T, 4>(q0, q1, kr + t * stride, stride, head_dim, scale, s0 + t0 + t, s1 + t0 + t);
    for (; t < len; ++t)
      Scores2<T, 1>(q0, q1, kr + t * stride, stride, head_dim, scale, s0 + t0 + t, s1 + t0 + t);
  }
  SoftCap(s0, n0, softcap);
  SoftCap(s1, n1, softcap);
  const float den0 = Softmax(s0, n0);
  const float den1 = Softmax(s1, n1);
  int j0 = 0;
  for (; j0 + 32 <= head_dim; j0 += 32) {
    Accumulate2<T, 4>(v, n0, n1, s0, s1, j0, den0, den1, out0, out1);
  }
  WithCount<3>((head_dim - j0) / 8, [&](auto n) {
    Accumulate2<T, decltype(n)::value>(v, n0, n1, s0, s1, j0, den0, den1, out0, out1);
  });
}

}  // namespace

void AttendHeadPair(const float* q0, const float* q1, const KvRows& k, const KvRows& v,
                    DType kv_type, int64_t n_kv0, int64_t n_kv1, int head_dim, float scale,
                    float softcap, float* out0, float* out1, float* scratch) {
  STET_CHECK(n_kv0 > 0 && n_kv1 > 0 && head_dim % 8 == 0);
  WithKvType(kv_type, "AttendHeadPair: the KV cache stores f32 or f16", [&](auto t) {
    Pair<decltype(t)::value>(q0, q1, k, v, n_kv0, n_kv1, head_dim, scale, softcap, out0, out1,
                             scratch);
  });
}

float Softmax(float* s, int64_t n) {
  float mx = -INFINITY;
  for (int64_t t = 0; t < n; ++t) mx = s[t] > mx ? s[t] : mx;
  const __m256 mxv = _mm256_set1_ps(mx);
  __m256 den = _mm256_setzero_ps();
  int64_t t = 0;
  for (; t + 8 <= n; t += 8) {
    const __m256 e = ExpF8(_mm256_sub_ps(_mm256_loadu_ps(s + t), mxv));
    _mm256_storeu_ps(s + t, e);
    den = _mm256_add_ps(den, e);
  }
  if (t < n) {
    for (int64_t u = t; u < n; ++u) s[u] = ExpF(s[u] - mx);
    const __m256i mask = TailMask(n - t);
    const __m256 next = _mm256_add_ps(den, _mm256_maskload_ps(s + t, mask));
    den = _mm256_blendv_ps(den, next, _mm256_castsi256_ps(mask));
  }
  return CombineLanes8(den);
}

void AttendHead(const float* q, const KvRows& k, const KvRows& v, DType kv_type, int64_t n_kv,
                int head_dim, float scale, float softcap, float* out, float* scratch) {
  STET_CHECK(n_kv > 0);
  WithKvType(kv_type, "AttendHead: the KV cache stores f32 or f16", [&](auto t) {
    Attend<decltype(t)::value>(q, k, v, n_kv, head_dim, scale, softcap, out, scratch);
  });
}

}  // namespace stet::kernels::avx2
