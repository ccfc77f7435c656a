// AVX-512 AttendHeadPair: two queries over the same K/V rows in one pass. A
// 16-lane vector holds both queries' 8 logical lanes (scores) or 8 output
// dims (the weighted sum of V), so each K/V load and f16 widening serves both.
// Numerics, per query exactly ref/attend_head.cc: s_t = Dot8(q, k_t) * scale
// (element j -> lane j%8, fma in increasing j, fixed lane tree); the shared
// softmax (avx2::Softmax); out[d] = fma(e_t, v_t[d], out[d]) in increasing t,
// then / denominator. Past the shorter query's n_kv its lanes are masked off,
// not fed zeros, so they keep their value whatever the V rows hold.
#include <immintrin.h>

#include <algorithm>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"

namespace stet::kernels::avx512 {

namespace {

// Eight K/V values from element j of a row, widened exactly, in both halves.
template <DType T>
inline __m512 LoadKv2(const uint8_t* row, int64_t j) {
  if constexpr (T == DType::kF32) {
    return _mm512_broadcast_f32x8(_mm256_loadu_ps(reinterpret_cast<const float*>(row) + j));
  } else {
    return _mm512_cvtph_ps(_mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * j))));
  }
}

// The fixed lane tree on each half: lane 0 gets lanes 0..7's result, lane 8
// lanes 8..15's. s4[i] = l[i] + l[i+4]; s2[i] = s4[i] + s4[i+2]; s2[0] + s2[1].
inline __m512 CombineHalves(__m512 v) {
  const __m512 s4 = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m512 s2 = _mm512_add_ps(s4, _mm512_permute_ps(s4, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm512_add_ps(s2, _mm512_permute_ps(s2, _MM_SHUFFLE(2, 3, 0, 1)));
}

// Scores of NT consecutive positions for both queries (qp: interleaved chunks).
template <DType T, int NT>
inline void Scores(const float* qp, const uint8_t* k, int64_t stride, int chunks, float scale,
                   float* s0, float* s1) {
  __m512 acc[NT];
  STET_UNROLL
  for (int u = 0; u < NT; ++u) acc[u] = _mm512_setzero_ps();
  for (int c = 0; c < chunks; ++c) {
    const __m512 qv = _mm512_loadu_ps(qp + 16 * c);
    STET_UNROLL
    for (int u = 0; u < NT; ++u)
      acc[u] = _mm512_fmadd_ps(qv, LoadKv2<T>(k + u * stride, 8 * c), acc[u]);
  }
  STET_UNROLL
  for (int u = 0; u < NT; ++u) {
    const __m512 r = CombineHalves(acc[u]);
    s0[u] = _mm512_cvtss_f32(r) * scale;
    s1[u] = _mm_cvtss_f32(_mm512_extractf32x4_ps(r, 2)) * scale;
  }
}

// Output dims [j0, j0 + 8 * NV) of both queries, positions in increasing t,
// run by run (the accumulators live across runs).
template <DType T, int NV>
void Accumulate(const KvRows& v, int64_t n0, int64_t n1, const float* e0, const float* e1, int j0,
                float den0, float den1, float* out0, float* out1) {
  __m512 acc[NV];
  STET_UNROLL
  for (int i = 0; i < NV; ++i) acc[i] = _mm512_setzero_ps();
  const int64_t n_min = std::min(n0, n1), n_max = std::max(n0, n1);
  const __mmask16 live = n0 > n1 ? 0x00FF : 0xFF00;
  const float* e_long = n0 > n1 ? e0 : e1;
  const int64_t stride = v.row_stride;
  for (int64_t t0 = 0, len = 0; t0 < n_max; t0 += len) {
    const uint8_t* vr = v.RunAt(t0, n_max, &len) - t0 * stride;  // position t: vr + t * stride
    const int64_t end = t0 + len;
    int64_t t = t0;
    for (; t < std::min(end, n_min); ++t) {
      const __m512 e = _mm512_insertf32x8(_mm512_set1_ps(e0[t]), _mm256_set1_ps(e1[t]), 1);
      const uint8_t* vt = vr + t * stride;
      STET_UNROLL
      for (int i = 0; i < NV; ++i) acc[i] = _mm512_fmadd_ps(e, LoadKv2<T>(vt, j0 + 8 * i), acc[i]);
    }
    for (; t < end; ++t) {
      const __m512 e = _mm512_set1_ps(e_long[t]);
      const uint8_t* vt = vr + t * stride;
      STET_UNROLL
      for (int i = 0; i < NV; ++i) {
        acc[i] = _mm512_mask3_fmadd_ps(e, LoadKv2<T>(vt, j0 + 8 * i), acc[i], live);
      }
    }
  }
  const __m512 den = _mm512_insertf32x8(_mm512_set1_ps(den0), _mm256_set1_ps(den1), 1);
  STET_UNROLL
  for (int i = 0; i < NV; ++i) {
    const __m512 r = _mm512_div_ps(acc[i], den);
    _mm256_storeu_ps(out0 + j0 + 8 * i, _mm512_castps512_ps256(r));
    _mm256_storeu_ps(out1 + j0 + 8 * i, _mm512_extractf32x8_ps(r, 1));
  }
}

template <DType T>
void AccumulateAll(const KvRows& v, int64_t n0, int64_t n1, const float* e0, const float* e1,
                   int head_dim, float den0, float den1, float* out0, float* out1) {
  int j0 = 0;
  for (; j0 + 64 <= head_dim; j0 += 64) {
    Accumulate<T, 8>(v, n0, n1, e0, e1, j0, den0, den1, out0, out1);
  }
  WithCount<7>((head_dim - j0) / 8, [&](auto n) {
    Accumulate<T, decltype(n)::value>(v, n0, n1, e0, e1, j0, den0, den1, out0, out1);
  });
}

template <DType T>
void Pair(const float* q0, const float* q1, const KvRows& k, const KvRows& v, int64_t n0,
          int64_t n1, int head_dim, float scale, float softcap, float* out0, float* out1,
          float* scratch) {
  const int64_t n_max = std::max(n0, n1);
  float* s0 = scratch;
  float* s1 = scratch + n_max;
  float* qp = scratch + 2 * n_max;
  const int chunks = head_dim / 8;
  for (int c = 0; c < chunks; ++c) {
    _mm256_storeu_ps(qp + 16 * c, _mm256_loadu_ps(q0 + 8 * c));
    _mm256_storeu_ps(qp + 16 * c + 8, _mm256_loadu_ps(q1 + 8 * c));
  }
  // Both queries' scores up to n_max (eight positions at a time within each
  // run); each softmax reads only its own n_kv.
  const int64_t stride = k.row_stride;
  for (int64_t t0 = 0, len = 0; t0 < n_max; t0 += len) {
    const uint8_t* kr = k.RunAt(t0, n_max, &len);
    int64_t t = 0;
    for (; t + 8 <= len; t += 8)
      Scores<T, 8>(qp, kr + t * stride, stride, chunks, scale, s0 + t0 + t, s1 + t0 + t);
    for (; t < len; ++t)
      Scores<T, 1>(qp, kr + t * stride, stride, chunks, scale, s0 + t0 + t, s1 + t0 + t);
  }
  SoftCap(s0, n0, softcap);
  SoftCap(s1, n1, softcap);
  const float den0 = avx2::Softmax(s0, n0);
  const float den1 = avx2::Softmax(s1, n1);
  AccumulateAll<T>(v, n0, n1, s0, s1, head_dim, den0, den1, out0, out1);
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

}  // namespace stet::kernels::avx512
