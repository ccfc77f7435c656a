// NEON AttendHead. Numerics, as ref/attend_head.cc and bit-equal to it: s_t =
// Dot8(q, k_t) * scale (element j -> lane j % 8 by fma in increasing j, lanes
// 0-3 and 4-7 in two float32x4_t, the fixed lane tree); SoftCap; max (scalar, as
// the reference compares); e_t = ExpF4(s_t - max) lane for lane (ExpF for the
// tail); denominator = 8-lane sum of e_t, lane t % 8; out[d] = fma(e_t, v_t[d],
// out[d]) for t = 0, 1, ..., then / denominator. K/V rows are walked run by run
// through kv_rows.h, so the cache's layout never reaches a value
// (attend_head_test.cc on aarch64 under qemu).
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/neon/neon_util.h"
#include "numerics/half.h"
#include "numerics/math.h"
#include "numerics/math_neon.h"

namespace stet::kernels::neon {

namespace {

// Four K/V values from element j of a row (f32 or f16), widened exactly.
template <DType T>
inline float32x4_t Load4(const uint8_t* row, int j) {
  if constexpr (T == DType::kF32) {
    return vld1q_f32(reinterpret_cast<const float*>(row) + j);
  } else {
    return LoadF16x4(reinterpret_cast<const uint16_t*>(row) + j);
  }
}

// Dot8(q, row) * scale.
template <DType T>
inline float Score(const float* q, const uint8_t* row, int head_dim, float scale) {
  Lanes8 acc = ZeroLanes();
  int j = 0;
  for (; j + 8 <= head_dim; j += 8) {
    acc.lo = vfmaq_f32(acc.lo, vld1q_f32(q + j), Load4<T>(row, j));
    acc.hi = vfmaq_f32(acc.hi, vld1q_f32(q + j + 4), Load4<T>(row, j + 4));
  }
  if (j == head_dim) return CombineLanes8(acc) * scale;
  float lanes[kLanes];
  StoreLanes(acc, lanes);
  for (int u = j; u < head_dim; ++u)
    lanes[u - j] = std::fma(q[u], LoadElement<T>(row, u), lanes[u - j]);
  return CombineLanes(lanes) * scale;
}

// s[t] = ExpF(s[t] - max s) in place; returns the 8-lane sum (lane t % 8).
float Softmax(float* s, int64_t n) {
  float mx = -INFINITY;
  for (int64_t t = 0; t < n; ++t) mx = s[t] > mx ? s[t] : mx;
  const float32x4_t mxv = vdupq_n_f32(mx);
  Lanes8 den = ZeroLanes();
  int64_t t = 0;
  for (; t + 8 <= n; t += 8) {
    const float32x4_t lo = ExpF4(vsubq_f32(vld1q_f32(s + t), mxv));
    const float32x4_t hi = ExpF4(vsubq_f32(vld1q_f32(s + t + 4), mxv));
    vst1q_f32(s + t, lo);
    vst1q_f32(s + t + 4, hi);
    den.lo = vaddq_f32(den.lo, lo);
    den.hi = vaddq_f32(den.hi, hi);
  }
  float lanes[kLanes];
  StoreLanes(den, lanes);
  for (int64_t u = t; u < n; ++u) {
    s[u] = ExpF(s[u] - mx);
    lanes[u - t] += s[u];
  }
  return CombineLanes(lanes);
}

// Output dims [j0, j0 + 4 * NV), positions in increasing t, run by run.
template <DType T, int NV>
void Accumulate(const KvRows& v, int64_t n_kv, const float* e, int j0, float den, float* out) {
  float32x4_t acc[NV];
  for (int i = 0; i < NV; ++i) acc[i] = vdupq_n_f32(0.0f);
  const int64_t stride = v.row_stride;
  for (int64_t t0 = 0, len = 0; t0 < n_kv; t0 += len) {
    const uint8_t* vr = v.RunAt(t0, n_kv, &len);
    for (int64_t t = 0; t < len; ++t) {
      const float32x4_t et = vdupq_n_f32(e[t0 + t]);
      const uint8_t* vt = vr + t * stride;
      for (int i = 0; i < NV; ++i) acc[i] = vfmaq_f32(acc[i], et, Load4<T>(vt, j0 + 4 * i));
    }
  }
  const float32x4_t d = vdupq_n_f32(den);
  for (int i = 0; i < NV; ++i) vst1q_f32(out + j0 + 4 * i, vdivq_f32(acc[i], d));
}

// The dims past the last multiple of 4, one at a time.
template <DType T>
void AccumulateTail(const KvRows& v, int64_t n_kv, const float* e, int j0, int head_dim, float den,
                    float* out) {
  for (int j = j0; j < head_dim; ++j) out[j] = 0.0f;
  for (int64_t t = 0; t < n_kv; ++t) {
    const uint8_t* vt = v.Row(t);
    for (int j = j0; j < head_dim; ++j) out[j] = std::fma(e[t], LoadElement<T>(vt, j), out[j]);
  }
  for (int j = j0; j < head_dim; ++j) out[j] = out[j] / den;
}

template <DType T>
void Attend(const float* q, const KvRows& k, const KvRows& v, int64_t n_kv, int head_dim,
            float scale, float softcap, float* out, float* scratch) {
  const int64_t stride = k.row_stride;
  for (int64_t t0 = 0, len = 0; t0 < n_kv; t0 += len) {
    const uint8_t* kr = k.RunAt(t0, n_kv, &len);
    for (int64_t t = 0; t < len; ++t)
      scratch[t0 + t] = Score<T>(q, kr + t * stride, head_dim, scale);
  }
  SoftCap(scratch, n_kv, softcap);
  const float den = Softmax(scratch, n_kv);
  // Chunks of up to 16 vectors (64 dims) stay in registers across all t.
  int j0 = 0;
  for (; j0 + 64 <= head_dim; j0 += 64) Accumulate<T, 16>(v, n_kv, scratch, j0, den, out);
  for (; j0 + 16 <= head_dim; j0 += 16) Accumulate<T, 4>(v, n_kv, scratch, j0, den, out);
  for (; j0 + 4 <= head_dim; j0 += 4) Accumulate<T, 1>(v, n_kv, scratch, j0, den, out);
  if (j0 < head_dim) AccumulateTail<T>(v, n_kv, scratch, j0, head_dim, den, out);
}

}  // namespace

void AttendHead(const float* q, const KvRows& k, const KvRows& v, DType kv_type, int64_t n_kv,
                int head_dim, float scale, float softcap, float* out, float* scratch) {
  STET_CHECK(n_kv > 0);
  WithKvType(kv_type, "AttendHead: the KV cache stores f32 or f16", [&](auto t) {
    Attend<decltype(t)::value>(q, k, v, n_kv, head_dim, scale, softcap, out, scratch);
  });
}

}  // namespace stet::kernels::neon
