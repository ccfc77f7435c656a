// AVX-512 AttendHeadPair / AttendHeadQuad: two or four queries over the same
// K/V rows in one pass, each K/V element loaded and widened once for all of
// them. Scores: a 16-lane vector holds one query's 8 logical lanes for two
// positions (rows t and t + 1); the weighted sum of V: 16 output dims of one
// query, V walked in blocks of positions so that each block is read from
// memory once for every dim and query.
// Numerics, per query exactly ref/attend_head.cc: s_t = Dot8(q, k_t) * scale
// (element j -> lane j%8, fma in increasing j, fixed lane tree); the shared
// softmax (avx2::Softmax); out[d] = fma(e_t, v_t[d], out[d]) in increasing t
// (the sums leave registers between blocks, not their order), then /
// denominator. Past a query's n_kv its lanes are masked off, not fed zeros, so
// they keep their value whatever the V rows hold.
#include <immintrin.h>

#include <algorithm>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/kv_prefetch.h"

namespace stet::kernels::avx512 {

namespace {

// Eight K values from element j of rows r0 (lanes 0..7) and r1 (lanes 8..15),
// widened exactly: one 16-lane widening per two positions, each element once.
template <DType T>
inline __m512 LoadRows2(const uint8_t* r0, const uint8_t* r1, int64_t j) {
  if constexpr (T == DType::kF32) {
    return _mm512_insertf32x8(
        _mm512_castps256_ps512(_mm256_loadu_ps(reinterpret_cast<const float*>(r0) + j)),
        _mm256_loadu_ps(reinterpret_cast<const float*>(r1) + j), 1);
  } else {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + 2 * j));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r1 + 2 * j));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
  }
}

// Sixteen V values from element j of a row, widened exactly; lanes outside
// mask read nothing and hold 0.
template <DType T>
inline __m512 LoadV16(const uint8_t* row, int64_t j, __mmask16 mask) {
  if constexpr (T == DType::kF32) {
    return _mm512_maskz_loadu_ps(mask, reinterpret_cast<const float*>(row) + j);
  } else {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, row + 2 * j));
  }
}

// The fixed lane tree on each half: lane 0 gets lanes 0..7's result, lane 8
// lanes 8..15's. s4[i] = l[i] + l[i+4]; s2[i] = s4[i] + s4[i+2]; s2[0] + s2[1].
inline __m512 CombineHalves(__m512 v) {
  const __m512 s4 = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m512 s2 = _mm512_add_ps(s4, _mm512_permute_ps(s4, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm512_add_ps(s2, _mm512_permute_ps(s2, _MM_SHUFFLE(2, 3, 0, 1)));
}

// Scores of NU pairs of positions (rows k + 2u * stride and the next; lone: one
// row, read twice, the second half unused) for Q queries: a vector holds one
// query's 8 lanes for two positions, so each K element is widened once and
// serves all Q queries. Query i's scores go to s[i][at...].
template <DType T, int Q, int NU>
inline void Scores(const float* const* q, const uint8_t* k, int64_t stride, int chunks, float scale,
                   float* const* s, int64_t at, bool lone = false) {
  __m512 acc[Q][NU];
  STET_UNROLL
  for (int i = 0; i < Q; ++i) STET_UNROLL
  for (int u = 0; u < NU; ++u) acc[i][u] = _mm512_setzero_ps();
  const int64_t second = lone ? 0 : stride;
  for (int c = 0; c < chunks; ++c) {
    __m512 qv[Q];
    STET_UNROLL
    for (int i = 0; i < Q; ++i) qv[i] = _mm512_broadcast_f32x8(_mm256_loadu_ps(q[i] + 8 * c));
    STET_UNROLL
    for (int u = 0; u < NU; ++u) {
      const uint8_t* r = k + 2 * u * stride;
      const __m512 kv = LoadRows2<T>(r, r + second, 8 * c);
      STET_UNROLL
      for (int i = 0; i < Q; ++i) acc[i][u] = _mm512_fmadd_ps(qv[i], kv, acc[i][u]);
    }
  }
  STET_UNROLL
  for (int i = 0; i < Q; ++i) STET_UNROLL
  for (int u = 0; u < NU; ++u) {
    const __m512 r = CombineHalves(acc[i][u]);
    s[i][at + 2 * u] = _mm512_cvtss_f32(r) * scale;
    if (!lone) s[i][at + 2 * u + 1] = _mm_cvtss_f32(_mm512_extractf32x4_ps(r, 2)) * scale;
  }
}

using x86::kAheadRows;
using Prefetcher = x86::KvPrefetcher;

// Every query's scores at positions [t0, t1), run by run.
template <DType T, int Q>
void AllScores(const float* const* q, const KvRows& k, int64_t t0, int64_t t1, int head_dim,
               float scale, float* const* s) {
  constexpr int kNU = Q <= 2 ? 4 : 3;
  const int chunks = head_dim / 8;
  const int64_t stride = k.row_stride;
  Prefetcher ahead(k, t1, RowBytes(T, head_dim), t0);
  for (int64_t r0 = t0, len = 0; r0 < t1; r0 += len) {
    const uint8_t* kr = k.RunAt(r0, t1, &len);
    int64_t t = 0;
    for (; t + 2 * kNU <= len; t += 2 * kNU) {
      ahead.Upto(r0 + t + 2 * kNU + kAheadRows);
      Scores<T, Q, kNU>(q, kr + t * stride, stride, chunks, scale, s, r0 + t);
    }
    for (; t + 2 <= len; t += 2)
      Scores<T, Q, 1>(q, kr + t * stride, stride, chunks, scale, s, r0 + t);
    if (t < len) Scores<T, Q, 1>(q, kr + t * stride, stride, chunks, scale, s, r0 + t, true);
  }
}

// One position for Q queries over output dims [j0, j0 + 16 * NV) (the last
// vector's dims: mask): acc[i] = fma(e_i, v_t, acc[i]) on query i's live lanes.
template <DType T, int Q, int NV, bool kMasked>
inline void AddPosition(const uint8_t* vt, int j0, __mmask16 mask, const float* w,
                        const __mmask16* live, __m512 (&acc)[Q][NV]) {
  STET_UNROLL
  for (int x = 0; x < NV; ++x) {
    const __m512 vv = LoadV16<T>(vt, j0 + 16 * x, x + 1 < NV ? 0xFFFF : mask);
    STET_UNROLL
    for (int i = 0; i < Q; ++i) {
      const __m512 wi = _mm512_set1_ps(w[i]);
      acc[i][x] = kMasked ? _mm512_mask3_fmadd_ps(wi, vv, acc[i][x], live[i])
                          : _mm512_fmadd_ps(wi, vv, acc[i][x]);
    }
  }
}

// Output dims [j0, j0 + 16 * NV) of Q queries over positions [b0, b1), in
// increasing t: query i's weights e[i], its lanes masked off (not fed zeros)
// once t >= n[i]. The sums start from and go back to sums[i], so a long
// context goes block by block with each block's V rows read once.
template <DType T, int Q, int NV>
void AccumulateBlock(const KvRows& v, const int64_t* n, const float* const* e, int64_t b0,
                     int64_t b1, int j0, __mmask16 mask, float* const* sums, Prefetcher* ahead) {
  __m512 acc[Q][NV];
  STET_UNROLL
  for (int i = 0; i < Q; ++i) STET_UNROLL
  for (int x = 0; x < NV; ++x) {
    acc[i][x] = _mm512_maskz_loadu_ps(x + 1 < NV ? 0xFFFF : mask, sums[i] + j0 + 16 * x);
  }
  const int64_t n_min = *std::min_element(n, n + Q);
  const int64_t stride = v.row_stride;
  for (int64_t t0 = b0, len = 0; t0 < b1; t0 += len) {
    const uint8_t* vr = v.RunAt(t0, b1, &len) - t0 * stride;  // position t: vr + t * stride
    const int64_t end = t0 + len;
    int64_t t = t0;
    float w[Q];
    __mmask16 live[Q] = {};
    for (; t < std::min(end, n_min); ++t) {
      if (ahead != nullptr) ahead->Upto(t + 1 + kAheadRows);
      STET_UNROLL
      for (int i = 0; i < Q; ++i) w[i] = e[i][t];
      AddPosition<T, Q, NV, false>(vr + t * stride, j0, mask, w, live, acc);
    }
    for (; t < end; ++t) {
      STET_UNROLL
      for (int i = 0; i < Q; ++i) {
        live[i] = t < n[i] ? 0xFFFF : 0;
        w[i] = t < n[i] ? e[i][t] : 0.0f;
      }
      AddPosition<T, Q, NV, true>(vr + t * stride, j0, mask, w, live, acc);
    }
  }
  STET_UNROLL
  for (int i = 0; i < Q; ++i) STET_UNROLL
  for (int x = 0; x < NV; ++x) {
    _mm512_mask_storeu_ps(sums[i] + j0 + 16 * x, x + 1 < NV ? 0xFFFF : mask, acc[i][x]);
  }
}

// out[i][j] for j in [j0, j1) (j0 % 16 == 0; j1 % 16 == 0 or the row's end,
// % 8 == 0) of Q queries: the weighted sum of V rows [0, n[i]) by weights e[i],
// / den[i]. Sixteen dims a vector, kNV vectors a pass (Q * kNV accumulators),
// over blocks of kBlock positions: the sums wait in out between blocks.
template <DType T, int Q>
void Values(const KvRows& v, const int64_t* n, const float* const* e, const float* den, int j0,
            int j1, int head_dim, float* const* out) {
  constexpr int kNV = Q <= 2 ? 8 : 4, kBlock = 64;
  const int64_t n_max = *std::max_element(n, n + Q);
  const int full = j0 + (j1 - j0) / (16 * kNV) * (16 * kNV), rest = j1 - full;
  const __mmask16 tail = rest % 16 == 0 ? 0xFFFF : 0x00FF;
  for (int i = 0; i < Q; ++i) std::fill(out[i] + j0, out[i] + j1, 0.0f);
  const int64_t elem = RowBytes(T, 8) / 8;
  Prefetcher ahead(v, n_max, RowBytes(T, head_dim), 0, j0 * elem, (j1 - j0) * elem);
  for (int64_t b0 = 0; b0 < n_max; b0 += kBlock) {
    const int64_t b1 = std::min(n_max, b0 + kBlock);
    for (int j = j0; j < full; j += 16 * kNV)
      AccumulateBlock<T, Q, kNV>(v, n, e, b0, b1, j, 0xFFFF, out, j == j0 ? &ahead : nullptr);
    if (rest == 0) continue;
    WithCount<kNV>((rest + 15) / 16, [&](auto nv) {
      AccumulateBlock<T, Q, decltype(nv)::value>(v, n, e, b0, b1, full, tail, out,
                                                 full == j0 ? &ahead : nullptr);
    });
  }
  for (int i = 0; i < Q; ++i) {
    const __m512 dv = _mm512_set1_ps(den[i]);
    for (int j = j0; j < j1; j += 16) {
      const __mmask16 m = j + 16 <= j1 ? 0xFFFF : 0x00FF;
      _mm512_mask_storeu_ps(out[i] + j, m, _mm512_div_ps(_mm512_maskz_loadu_ps(m, out[i] + j), dv));
    }
  }
}

// Q queries over the same K/V rows; scratch: Q * max(n) floats.
template <DType T, int Q>
void Group(const float* const* q, const KvRows& k, const KvRows& v, const int64_t* n, int head_dim,
           float scale, float softcap, float* const* out, float* scratch) {
  const int64_t n_max = *std::max_element(n, n + Q);
  float* s[Q];
  for (int i = 0; i < Q; ++i) s[i] = scratch + i * n_max;
  // Every query's scores up to n_max; each softmax reads only its own n_kv.
  AllScores<T, Q>(q, k, 0, n_max, head_dim, scale, s);
  float den[Q];
  for (int i = 0; i < Q; ++i) {
    SoftCap(s[i], n[i], softcap);
    den[i] = avx2::Softmax(s[i], n[i]);
  }
  Values<T, Q>(v, n, s, den, 0, head_dim, head_dim, out);
}

// f(Q, i) for query chunks [i, i + Q) covering [0, nq): fours, then a two, a one.
template <typename F>
void QueryChunks(int nq, F&& f) {
  int i = 0;
  for (; i + 4 <= nq; i += 4) f(std::integral_constant<int, 4>{}, i);
  if (i + 2 <= nq) {
    f(std::integral_constant<int, 2>{}, i);
    i += 2;
  }
  if (i < nq) f(std::integral_constant<int, 1>{}, i);
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
    Group<decltype(t)::value, 2>(q, k, v, n, head_dim, scale, softcap, out, scratch);
  });
}

void AttendScores(const float* const* qs, int nq, const KvRows& k, DType kv_type, int64_t t0,
                  int64_t t1, int head_dim, float scale, float* const* s) {
  STET_CHECK(head_dim % 8 == 0);
  WithKvType(kv_type, "AttendScores: the KV cache stores f32 or f16", [&](auto kt) {
    QueryChunks(nq, [&](auto q, int i) {
      AllScores<decltype(kt)::value, decltype(q)::value>(qs + i, k, t0, t1, head_dim, scale, s + i);
    });
  });
}

void AttendValues(const float* const* e, const float* den, int nq, const KvRows& v, DType kv_type,
                  int64_t n, int j0, int j1, int head_dim, float* const* out) {
  STET_CHECK(head_dim % 8 == 0 && j0 % 16 == 0 && (j1 % 16 == 0 || j1 == head_dim));
  const int64_t ns[4] = {n, n, n, n};
  WithKvType(kv_type, "AttendValues: the KV cache stores f32 or f16", [&](auto kt) {
    QueryChunks(nq, [&](auto q, int i) {
      Values<decltype(kt)::value, decltype(q)::value>(v, ns, e + i, den + i, j0, j1, head_dim,
                                                      out + i);
    });
  });
}

void AttendHeadQuad(const float* const* q, const KvRows& k, const KvRows& v, DType kv_type,
                    const int64_t* n_kv, int head_dim, float scale, float softcap,
                    float* const* out, float* scratch) {
  STET_CHECK(head_dim % 8 == 0);
  for (int i = 0; i < 4; ++i) STET_CHECK(n_kv[i] > 0);
  WithKvType(kv_type, "AttendHeadQuad: the KV cache stores f32 or f16", [&](auto t) {
    Group<decltype(t)::value, 4>(q, k, v, n_kv, head_dim, scale, softcap, out, scratch);
  });
}

}  // namespace stet::kernels::avx512
