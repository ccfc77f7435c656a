// AVX-512 AttendHeadPair / AttendHeadQuad: two or four queries over the same
// K/V rows in one pass. A 16-lane vector holds a pair's 8 logical lanes
// (scores) or 8 output dims (the weighted sum of V), so each K/V load and f16
// widening serves both queries of a pair, and (quad) both pairs.
// Numerics, per query exactly ref/attend_head.cc: s_t = Dot8(q, k_t) * scale
// (element j -> lane j%8, fma in increasing j, fixed lane tree); the shared
// softmax (avx2::Softmax); out[d] = fma(e_t, v_t[d], out[d]) in increasing t,
// then / denominator. Past a query's n_kv its lanes are masked off, not fed
// zeros, so they keep their value whatever the V rows hold.
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

// Scores of NT consecutive positions for P pairs of queries (qp: pair p's
// interleaved chunks at qp + 16 * chunks * p; s[2p], s[2p + 1]: its queries'
// scores): each K load and widening serves all 2P queries.
template <DType T, int P, int NT>
inline void Scores(const float* qp, const uint8_t* k, int64_t stride, int chunks, float scale,
                   float* const* s, int64_t at) {
  __m512 acc[P][NT];
  STET_UNROLL
  for (int p = 0; p < P; ++p) STET_UNROLL
  for (int u = 0; u < NT; ++u) acc[p][u] = _mm512_setzero_ps();
  for (int c = 0; c < chunks; ++c) {
    __m512 qv[P];
    STET_UNROLL
    for (int p = 0; p < P; ++p) qv[p] = _mm512_loadu_ps(qp + 16 * (chunks * p + c));
    STET_UNROLL
    for (int u = 0; u < NT; ++u) {
      const __m512 kv = LoadKv2<T>(k + u * stride, 8 * c);
      STET_UNROLL
      for (int p = 0; p < P; ++p) acc[p][u] = _mm512_fmadd_ps(qv[p], kv, acc[p][u]);
    }
  }
  STET_UNROLL
  for (int p = 0; p < P; ++p) STET_UNROLL
  for (int u = 0; u < NT; ++u) {
    const __m512 r = CombineHalves(acc[p][u]);
    s[2 * p][at + u] = _mm512_cvtss_f32(r) * scale;
    s[2 * p + 1][at + u] = _mm_cvtss_f32(_mm512_extractf32x4_ps(r, 2)) * scale;
  }
}

// Both halves of a 16-lane vector: a in lanes 0..7, b in 8..15.
inline __m512 Halves(float a, float b) {
  return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

// Output dims [j0, j0 + 8 * NV) of P pairs of queries (n[q]: query q's n_kv,
// e[q] its weights), positions in increasing t, run by run (the accumulators
// live across runs); a query's lanes are masked off past its n_kv.
template <DType T, int P, int NV>
void Accumulate(const KvRows& v, const int64_t* n, const float* const* e, int j0, const float* den,
                float* const* out) {
  __m512 acc[P][NV];
  STET_UNROLL
  for (int p = 0; p < P; ++p) STET_UNROLL
  for (int i = 0; i < NV; ++i) acc[p][i] = _mm512_setzero_ps();
  const int64_t n_min = *std::min_element(n, n + 2 * P), n_max = *std::max_element(n, n + 2 * P);
  const int64_t stride = v.row_stride;
  for (int64_t t0 = 0, len = 0; t0 < n_max; t0 += len) {
    const uint8_t* vr = v.RunAt(t0, n_max, &len) - t0 * stride;  // position t: vr + t * stride
    const int64_t end = t0 + len;
    int64_t t = t0;
    for (; t < std::min(end, n_min); ++t) {
      __m512 w[P];
      STET_UNROLL
      for (int p = 0; p < P; ++p) w[p] = Halves(e[2 * p][t], e[2 * p + 1][t]);
      const uint8_t* vt = vr + t * stride;
      STET_UNROLL
      for (int i = 0; i < NV; ++i) {
        const __m512 vv = LoadKv2<T>(vt, j0 + 8 * i);
        STET_UNROLL
        for (int p = 0; p < P; ++p) acc[p][i] = _mm512_fmadd_ps(w[p], vv, acc[p][i]);
      }
    }
    for (; t < end; ++t) {
      __m512 w[P];
      __mmask16 live[P];
      STET_UNROLL
      for (int p = 0; p < P; ++p) {
        live[p] =
            static_cast<__mmask16>((t < n[2 * p] ? 0x00FF : 0) | (t < n[2 * p + 1] ? 0xFF00 : 0));
        w[p] = Halves(e[2 * p][t], e[2 * p + 1][t]);
      }
      const uint8_t* vt = vr + t * stride;
      STET_UNROLL
      for (int i = 0; i < NV; ++i) {
        const __m512 vv = LoadKv2<T>(vt, j0 + 8 * i);
        STET_UNROLL
        for (int p = 0; p < P; ++p) acc[p][i] = _mm512_mask3_fmadd_ps(w[p], vv, acc[p][i], live[p]);
      }
    }
  }
  STET_UNROLL
  for (int p = 0; p < P; ++p) {
    const __m512 dv = Halves(den[2 * p], den[2 * p + 1]);
    STET_UNROLL
    for (int i = 0; i < NV; ++i) {
      const __m512 r = _mm512_div_ps(acc[p][i], dv);
      _mm256_storeu_ps(out[2 * p] + j0 + 8 * i, _mm512_castps512_ps256(r));
      _mm256_storeu_ps(out[2 * p + 1] + j0 + 8 * i, _mm512_extractf32x8_ps(r, 1));
    }
  }
}

template <DType T, int P>
void AccumulateAll(const KvRows& v, const int64_t* n, const float* const* e, int head_dim,
                   const float* den, float* const* out) {
  // P = 2 keeps 2 x 4 accumulators a pass (2 x 8 and the V loads would spill).
  constexpr int kNV = P == 1 ? 8 : 4;
  int j0 = 0;
  for (; j0 + 8 * kNV <= head_dim; j0 += 8 * kNV) Accumulate<T, P, kNV>(v, n, e, j0, den, out);
  WithCount<kNV - 1>((head_dim - j0) / 8, [&](auto nv) {
    Accumulate<T, P, decltype(nv)::value>(v, n, e, j0, den, out);
  });
}

// 2P queries over the same K/V rows in one pass; scratch: 2P * max(n) + 2P * head_dim floats.
template <DType T, int P>
void Pairs(const float* const* q, const KvRows& k, const KvRows& v, const int64_t* n, int head_dim,
           float scale, float softcap, float* const* out, float* scratch) {
  const int64_t n_max = *std::max_element(n, n + 2 * P);
  float* s[2 * P];
  for (int i = 0; i < 2 * P; ++i) s[i] = scratch + i * n_max;
  float* qp = scratch + 2 * P * n_max;
  const int chunks = head_dim / 8;
  for (int p = 0; p < P; ++p) {
    for (int c = 0; c < chunks; ++c) {
      _mm256_storeu_ps(qp + 16 * (chunks * p + c), _mm256_loadu_ps(q[2 * p] + 8 * c));
      _mm256_storeu_ps(qp + 16 * (chunks * p + c) + 8, _mm256_loadu_ps(q[2 * p + 1] + 8 * c));
    }
  }
  // Every query's scores up to n_max (eight positions at a time within each
  // run); each softmax reads only its own n_kv.
  const int64_t stride = k.row_stride;
  for (int64_t t0 = 0, len = 0; t0 < n_max; t0 += len) {
    const uint8_t* kr = k.RunAt(t0, n_max, &len);
    int64_t t = 0;
    for (; t + 8 <= len; t += 8)
      Scores<T, P, 8>(qp, kr + t * stride, stride, chunks, scale, s, t0 + t);
    for (; t < len; ++t) Scores<T, P, 1>(qp, kr + t * stride, stride, chunks, scale, s, t0 + t);
  }
  float den[2 * P];
  for (int i = 0; i < 2 * P; ++i) {
    SoftCap(s[i], n[i], softcap);
    den[i] = avx2::Softmax(s[i], n[i]);
  }
  AccumulateAll<T, P>(v, n, s, head_dim, den, out);
}

}  // namespace

void AttendHeadPair(const float* q0, const float* q1, const KvRows& k, const KvRows& v,
                    DType kv_type, int64_t n_kv0, int64_t n_kv1, int head_dim, float scale,
                    float softcap, float* out0, float* out1, float* scratch) {
  STET_CHECK(n_kv0 > 0 && n_kv1 > 0 && head_dim % 8 == 0);
  const float* q[2] = {q0, q1};
  const int64_t n[2] = {n_kv0, n_kv1};
  float* out[2] = {out0, out1};
  WithKvType(kv_type, "AttendHeadPair: the KV cache stores f32 or f16", [&](auto t) {
    Pairs<decltype(t)::value, 1>(q, k, v, n, head_dim, scale, softcap, out, scratch);
  });
}

void AttendHeadQuad(const float* const* q, const KvRows& k, const KvRows& v, DType kv_type,
                    const int64_t* n_kv, int head_dim, float scale, float softcap,
                    float* const* out, float* scratch) {
  STET_CHECK(head_dim % 8 == 0);
  for (int i = 0; i < 4; ++i) STET_CHECK(n_kv[i] > 0);
  WithKvType(kv_type, "AttendHeadQuad: the KV cache stores f32 or f16", [&](auto t) {
    Pairs<decltype(t)::value, 2>(q, k, v, n_kv, head_dim, scale, softcap, out, scratch);
  });
}

}  // namespace stet::kernels::avx512
