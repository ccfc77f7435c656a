// AVX2 AttendHead. Numerics, as ref/attend_head.cc and bit-equal to it: s_t =
// Dot8(q, k_t) * scale (four positions in flight, each its own 8-lane chain);
// max; e_t = ExpF8(s_t - max) (ExpF for the tail); denominator = 8-lane sum of
// e_t, lane t%8; out[d] = fma(e_t, v_t[d], out[d]) for t = 0, 1, ..., then / den.
// Depends on n_kv and head_dim only, not on the cache's layout (K/V rows are
// walked run by run through kv_rows.h; attend_head_test.cc). AttendHeadPair:
// two queries share every K/V load, each computed exactly as above. Softmax is shared
// with the AVX-512 paired kernel.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/kv_prefetch.h"
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

// CombineLanes8 of four vectors at once, times scale, stored to s[0..3]: the
// same adds in the same tree per vector (s4[i] = l[i] + l[i+4]; s2[i] = s4[i] +
// s4[i+2]; s2[0] + s2[1]), four scores per shuffle sequence.
inline void StoreScores4(const __m256* a, float scale, float* s) {
  const __m256 x01 = _mm256_add_ps(_mm256_permute2f128_ps(a[0], a[1], 0x20),
                                   _mm256_permute2f128_ps(a[0], a[1], 0x31));  // s4 a0 | s4 a1
  const __m256 x23 = _mm256_add_ps(_mm256_permute2f128_ps(a[2], a[3], 0x20),
                                   _mm256_permute2f128_ps(a[2], a[3], 0x31));  // s4 a2 | s4 a3
  // s2: a0 in lanes 0-1, a2 in 2-3 | a1 in 4-5, a3 in 6-7.
  const __m256 s2 = _mm256_add_ps(_mm256_shuffle_ps(x01, x23, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm256_shuffle_ps(x01, x23, _MM_SHUFFLE(3, 2, 3, 2)));
  // r: a0, a2 | a1, a3 in the low two lanes of each half.
  const __m256 r = _mm256_add_ps(_mm256_shuffle_ps(s2, s2, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm256_shuffle_ps(s2, s2, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m128 out = _mm_unpacklo_ps(_mm256_castps256_ps128(r), _mm256_extractf128_ps(r, 1));
  _mm_storeu_ps(s, _mm_mul_ps(out, _mm_set1_ps(scale)));
}

// s[t] for NT positions: NT == 4 combines four at once, else one by one.
template <int NT>
inline void StoreScores(const __m256* acc, float scale, float* s) {
  if constexpr (NT == 4) {
    StoreScores4(acc, scale, s);
  } else {
    STET_UNROLL
    for (int t = 0; t < NT; ++t) s[t] = CombineLanes8(acc[t]) * scale;
  }
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
  StoreScores<NT>(acc, scale, s);
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
    for (; t < len; ++t)
      Scores<T, 1>(q, kr + t * stride, stride, head_dim, scale, scratch + t0 + t);
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
  StoreScores<NT>(a0, scale, s0);
  StoreScores<NT>(a1, scale, s1);
}

// Output dims [j0, j0 + 8 * NV) of both queries: positions below min(n0, n1)
// feed both, the rest only the longer query.
// One position t of the value sums, NV vectors from element j0 of its V row vt:
// acc[i] += e_t * v_t[j0 + 8i] (one fma per lane). AddPosition2 does it for two queries
// (a0 with x0, a1 with x1) on each load.
template <DType T, int NV>
inline void AddPosition(const uint8_t* vt, int j0, __m256 x, __m256* acc) {
  STET_UNROLL
  for (int i = 0; i < NV; ++i) acc[i] = _mm256_fmadd_ps(x, Load8<T>(vt, j0 + 8 * i), acc[i]);
}

template <DType T, int NV>
inline void AddPosition2(const uint8_t* vt, int j0, __m256 x0, __m256 x1, __m256* a0, __m256* a1) {
  STET_UNROLL
  for (int i = 0; i < NV; ++i) {
    const __m256 vv = Load8<T>(vt, j0 + 8 * i);
    a0[i] = _mm256_fmadd_ps(x0, vv, a0[i]);
    a1[i] = _mm256_fmadd_ps(x1, vv, a1[i]);
  }
}

template <DType T, int NV>
inline void Accumulate2(const KvRows& v, int64_t n0, int64_t n1, const float* e0, const float* e1,
                        int j0, float den0, float den1, float* out0, float* out1,
                        x86::KvPrefetcher* ahead = nullptr) {
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
      if (ahead != nullptr) ahead->Upto(t + 1 + x86::kAheadRows);
      AddPosition2<T, NV>(vr + t * stride, j0, _mm256_set1_ps(e0[t]), _mm256_set1_ps(e1[t]), a0,
                          a1);
    }
    if (t < end) {
      __m256* acc = n0 > n1 ? a0 : a1;
      const float* e = n0 > n1 ? e0 : e1;
      for (; t < end; ++t) AddPosition<T, NV>(vr + t * stride, j0, _mm256_set1_ps(e[t]), acc);
    }
  }
  const __m256 d0 = _mm256_set1_ps(den0), d1 = _mm256_set1_ps(den1);
  STET_UNROLL
  for (int i = 0; i < NV; ++i) {
    _mm256_storeu_ps(out0 + j0 + 8 * i, _mm256_div_ps(a0[i], d0));
    _mm256_storeu_ps(out1 + j0 + 8 * i, _mm256_div_ps(a1[i], d1));
  }
}

// Scores of two queries at positions [t0, t1), run by run, with the K rows
// prefetched ahead.
template <DType T>
void PairScores(const float* q0, const float* q1, const KvRows& k, int64_t t0, int64_t t1,
                int head_dim, float scale, float* s0, float* s1) {
  const int64_t stride = k.row_stride;
  x86::KvPrefetcher ahead(k, t1, RowBytes(T, head_dim), t0);
  for (int64_t r0 = t0, len = 0; r0 < t1; r0 += len) {
    const uint8_t* kr = k.RunAt(r0, t1, &len);
    int64_t t = 0;
    for (; t + 4 <= len; t += 4) {
      ahead.Upto(r0 + t + 4 + x86::kAheadRows);
      Scores2<T, 4>(q0, q1, kr + t * stride, stride, head_dim, scale, s0 + r0 + t, s1 + r0 + t);
    }
    for (; t < len; ++t)
      Scores2<T, 1>(q0, q1, kr + t * stride, stride, head_dim, scale, s0 + r0 + t, s1 + r0 + t);
  }
}

// Output dims [j0, j1) of two queries (32 a pass), V's part of each row prefetched
// ahead during the first pass.
template <DType T>
void PairValues(const KvRows& v, int64_t n0, int64_t n1, const float* e0, const float* e1,
                float den0, float den1, int j0, int j1, int head_dim, float* out0, float* out1) {
  const int64_t elem = RowBytes(T, 8) / 8;
  x86::KvPrefetcher ahead(v, n0 < n1 ? n1 : n0, RowBytes(T, head_dim), 0, j0 * elem,
                          (j1 - j0) * elem);
  int j = j0;
  for (; j + 32 <= j1; j += 32)
    Accumulate2<T, 4>(v, n0, n1, e0, e1, j, den0, den1, out0, out1, j == j0 ? &ahead : nullptr);
  WithCount<3>((j1 - j) / 8, [&](auto nv) {
    Accumulate2<T, decltype(nv)::value>(v, n0, n1, e0, e1, j, den0, den1, out0, out1);
  });
}

template <DType T>
void Pair(const float* q0, const float* q1, const KvRows& k, const KvRows& v, int64_t n0,
          int64_t n1, int head_dim, float scale, float softcap, float* out0, float* out1,
          float* scratch) {
  const int64_t n_max = n0 < n1 ? n1 : n0;
  float* s0 = scratch;
  float* s1 = scratch + n_max;
  PairScores<T>(q0, q1, k, 0, n_max, head_dim, scale, s0, s1);
  SoftCap(s0, n0, softcap);
  SoftCap(s1, n1, softcap);
  const float den0 = Softmax(s0, n0);
  const float den1 = Softmax(s1, n1);
  PairValues<T>(v, n0, n1, s0, s1, den0, den1, 0, head_dim, head_dim, out0, out1);
}

// AttendHeads: nq queries over the same K/V rows, walked in blocks of
// kHeadsBlock positions that every query passes over while the block is in L1:
// a long context is read from memory once per call instead of once per query
// pair. Per query exactly the single kernel's operations: scores by
// Scores/Scores2, Softmax, out[d] = fma(e_t, v_t[d], out[d]) in increasing t
// (the accumulators wait in scratch between blocks), then / denominator.
constexpr int64_t kHeadsBlock = 32;

int64_t Clamp(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

// Scores of one query for run positions [b, e) (kr: the run's first row, t0 its
// position).
template <DType T>
void ScoreRange(const float* q, const uint8_t* kr, int64_t stride, int64_t t0, int64_t b, int64_t e,
                int head_dim, float scale, float* s) {
  int64_t t = b;
  for (; t + 4 <= e; t += 4) Scores<T, 4>(q, kr + t * stride, stride, head_dim, scale, s + t0 + t);
  for (; t < e; ++t) Scores<T, 1>(q, kr + t * stride, stride, head_dim, scale, s + t0 + t);
}

// Scores of every query for run positions [b0, b1), each clipped to its n_kv.
template <DType T>
void ScoreBlock(const float* const* qs, const int64_t* n_kv, int nq, const uint8_t* kr,
                int64_t stride, int64_t t0, int64_t b0, int64_t b1, int head_dim, float scale,
                float* const* s) {
  for (int i = 0; i < nq; i += 2) {
    const int64_t e0 = Clamp(n_kv[i] - t0, b0, b1);
    if (i + 1 == nq) {
      ScoreRange<T>(qs[i], kr, stride, t0, b0, e0, head_dim, scale, s[i]);
      break;
    }
    const int64_t e1 = Clamp(n_kv[i + 1] - t0, b0, b1);
    const int64_t both = e0 < e1 ? e0 : e1;
    int64_t t = b0;
    for (; t + 4 <= both; t += 4) {
      Scores2<T, 4>(qs[i], qs[i + 1], kr + t * stride, stride, head_dim, scale, s[i] + t0 + t,
                    s[i + 1] + t0 + t);
    }
    for (; t < both; ++t) {
      Scores2<T, 1>(qs[i], qs[i + 1], kr + t * stride, stride, head_dim, scale, s[i] + t0 + t,
                    s[i + 1] + t0 + t);
    }
    const int j = e0 > e1 ? i : i + 1;
    ScoreRange<T>(qs[j], kr, stride, t0, t, e0 > e1 ? e0 : e1, head_dim, scale, s[j]);
  }
}

// Dims [j0, j0 + 8 * NV) of queries a and b (b < 0: none) over run positions
// [b0, ea) and [b0, eb): e's are the exp'd scores, acc the accumulators in scratch.
template <DType T, int NV>
void AccRange(const uint8_t* vr, int64_t stride, int64_t t0, int64_t b0, int64_t ea, int64_t eb,
              const float* pa, const float* pb, float* acc_a, float* acc_b, int j0) {
  __m256 a0[NV], a1[NV];
  STET_UNROLL
  for (int n = 0; n < NV; ++n) {
    a0[n] = _mm256_loadu_ps(acc_a + j0 + 8 * n);
    a1[n] = pb != nullptr ? _mm256_loadu_ps(acc_b + j0 + 8 * n) : _mm256_setzero_ps();
  }
  const int64_t both = pb != nullptr ? (ea < eb ? ea : eb) : b0;
  int64_t t = b0;
  for (; t < both; ++t) {
    AddPosition2<T, NV>(vr + t * stride, j0, _mm256_set1_ps(pa[t0 + t]), _mm256_set1_ps(pb[t0 + t]),
                        a0, a1);
  }
  // The rest of the longer one.
  const bool a_longer = pb == nullptr || ea > eb;
  __m256* acc = a_longer ? a0 : a1;
  const float* p = a_longer ? pa : pb;
  for (const int64_t e = a_longer ? ea : eb; t < e; ++t) {
    AddPosition<T, NV>(vr + t * stride, j0, _mm256_set1_ps(p[t0 + t]), acc);
  }
  STET_UNROLL
  for (int n = 0; n < NV; ++n) {
    _mm256_storeu_ps(acc_a + j0 + 8 * n, a0[n]);
    if (pb != nullptr) _mm256_storeu_ps(acc_b + j0 + 8 * n, a1[n]);
  }
}

template <DType T>
void AccBlock(const int64_t* n_kv, int nq, const uint8_t* vr, int64_t stride, int64_t t0,
              int64_t b0, int64_t b1, int head_dim, float* const* s, float* const* acc) {
  for (int i = 0; i < nq; i += 2) {
    const int64_t ea = Clamp(n_kv[i] - t0, b0, b1);
    const bool pair = i + 1 < nq;
    const int64_t eb = pair ? Clamp(n_kv[i + 1] - t0, b0, b1) : b0;
    const float* pb = pair ? s[i + 1] : nullptr;
    float* acc_b = pair ? acc[i + 1] : nullptr;
    int j0 = 0;
    for (; j0 + 32 <= head_dim; j0 += 32) {
      AccRange<T, 4>(vr, stride, t0, b0, ea, eb, s[i], pb, acc[i], acc_b, j0);
    }
    WithCount<3>((head_dim - j0) / 8, [&](auto n) {
      AccRange<T, decltype(n)::value>(vr, stride, t0, b0, ea, eb, s[i], pb, acc[i], acc_b, j0);
    });
  }
}

template <DType T>
void Heads(const float* const* qs, const int64_t* n_kv, int nq, const KvRows& k, const KvRows& v,
           int head_dim, float scale, float softcap, float* const* outs, float* scratch) {
  int64_t n_max = 0;
  for (int i = 0; i < nq; ++i) n_max = n_kv[i] > n_max ? n_kv[i] : n_max;
  const int64_t ld = (n_max + 7) / 8 * 8;
  float* s[kMaxAttendQueries];
  float* acc[kMaxAttendQueries];
  for (int i = 0; i < nq; ++i) {
    s[i] = scratch + i * ld;
    acc[i] = scratch + nq * ld + static_cast<int64_t>(i) * head_dim;
    std::memset(acc[i], 0, static_cast<size_t>(head_dim) * sizeof(float));
  }
  // Prefetch a block ahead on rows of 512+ bytes only: on 256-byte rows
  // (head_dim 128, four queries) the burst a block made it slower (Zen 4).
  const int64_t row_bytes = RowBytes(T, head_dim);
  const int64_t n_ahead = row_bytes >= 512 ? n_max : 0;
  x86::KvPrefetcher k_ahead(k, n_ahead, row_bytes), v_ahead(v, n_ahead, row_bytes);
  for (int64_t t0 = 0, len = 0; t0 < n_max; t0 += len) {
    const uint8_t* kr = k.RunAt(t0, n_max, &len);
    for (int64_t b0 = 0; b0 < len; b0 += kHeadsBlock) {
      const int64_t b1 = b0 + kHeadsBlock < len ? b0 + kHeadsBlock : len;
      k_ahead.Upto(t0 + b1 + x86::kAheadRows);
      ScoreBlock<T>(qs, n_kv, nq, kr, k.row_stride, t0, b0, b1, head_dim, scale, s);
    }
  }
  float den[kMaxAttendQueries];
  for (int i = 0; i < nq; ++i) {
    SoftCap(s[i], n_kv[i], softcap);
    den[i] = Softmax(s[i], n_kv[i]);
  }
  for (int64_t t0 = 0, len = 0; t0 < n_max; t0 += len) {
    const uint8_t* vr = v.RunAt(t0, n_max, &len);
    for (int64_t b0 = 0; b0 < len; b0 += kHeadsBlock) {
      const int64_t b1 = b0 + kHeadsBlock < len ? b0 + kHeadsBlock : len;
      v_ahead.Upto(t0 + b1 + x86::kAheadRows);
      AccBlock<T>(n_kv, nq, vr, v.row_stride, t0, b0, b1, head_dim, s, acc);
    }
  }
  for (int i = 0; i < nq; ++i) {
    const __m256 d = _mm256_set1_ps(den[i]);
    for (int j = 0; j < head_dim; j += 8) {
      _mm256_storeu_ps(outs[i] + j, _mm256_div_ps(_mm256_loadu_ps(acc[i] + j), d));
    }
  }
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

void AttendHeads(const float* const* qs, const int64_t* n_kv, int nq, const KvRows& k,
                 const KvRows& v, DType kv_type, int head_dim, float scale, float softcap,
                 float* const* outs, float* scratch) {
  STET_CHECK(nq >= 1 && nq <= kMaxAttendQueries && head_dim % 8 == 0);
  for (int i = 0; i < nq; ++i) STET_CHECK(n_kv[i] > 0);
  WithKvType(kv_type, "AttendHeads: the KV cache stores f32 or f16", [&](auto t) {
    Heads<decltype(t)::value>(qs, n_kv, nq, k, v, head_dim, scale, softcap, outs, scratch);
  });
}

void AttendScores(const float* const* qs, int nq, const KvRows& k, DType kv_type, int64_t t0,
                  int64_t t1, int head_dim, float scale, float* const* s) {
  STET_CHECK(head_dim % 8 == 0);
  WithKvType(kv_type, "AttendScores: the KV cache stores f32 or f16", [&](auto kt) {
    constexpr DType T = decltype(kt)::value;
    int64_t ends[kMaxAttendQueries];  // every query's scores end at t1
    std::fill(ends, ends + nq, t1);
    x86::KvPrefetcher ahead(k, t1, RowBytes(T, head_dim), t0);
    for (int64_t r0 = t0, len = 0; r0 < t1; r0 += len) {
      const uint8_t* kr = k.RunAt(r0, t1, &len);
      for (int64_t b = 0; b < len; b += 4) {  // all queries over four rows while in L1
        ahead.Upto(r0 + b + 4 + x86::kAheadRows);
        ScoreBlock<T>(qs, ends, nq, kr, k.row_stride, r0, b, std::min(len, b + 4), head_dim, scale,
                      s);
      }
    }
  });
}

void AttendValues(const float* const* e, const float* den, int nq, const KvRows& v, DType kv_type,
                  int64_t n, int j0, int j1, int head_dim, float* const* out) {
  STET_CHECK(j0 % 8 == 0 && j1 % 8 == 0);
  WithKvType(kv_type, "AttendValues: the KV cache stores f32 or f16", [&](auto kt) {
    constexpr DType T = decltype(kt)::value;
    int i = 0;
    for (; i + 1 < nq; i += 2) {  // two queries on each V load
      PairValues<T>(v, n, n, e[i], e[i + 1], den[i], den[i + 1], j0, j1, head_dim, out[i],
                    out[i + 1]);
    }
    if (i == nq) return;
    for (int j = j0; j < j1; j += 64) {
      WithCount<8>((std::min(j1, j + 64) - j) / 8, [&](auto nv) {
        Accumulate<T, decltype(nv)::value>(v, n, e[i], j, 8, den[i], out[i]);
      });
    }
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
