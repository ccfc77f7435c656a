// Scalar reference AttendHead and its three steps (AttendScores, AttendSoftmax,
// AttendValues: AttendHead is exactly the three in a row). Numerics: s_t =
// Dot8(q, k_t) * scale (then SoftCap when softcap > 0); max; e_t = ExpF(s_t -
// max); denominator = 8-lane sum of e_t (lane t%8, plain adds, fixed tree);
// out[d] = fma(e_t, v_t[d], out[d]) for t = 0, 1, ..., then / denominator.
// Depends on n_kv and head_dim only, never on how the cache was filled or laid
// out (attend_head_test.cc).
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/internal.h"
#include "numerics/half.h"
#include "numerics/math.h"

namespace stet::kernels::ref {

namespace {

inline float LoadKv(const uint8_t* row, int j, DType t) {
  return t == DType::kF32 ? LoadElement<DType::kF32>(row, j) : LoadElement<DType::kF16>(row, j);
}

}  // namespace

void AttendScores(const float* const* qs, int nq, const KvRows& k, DType kv_type, int64_t t0,
                  int64_t t1, int head_dim, float scale, float* const* s) {
  for (int i = 0; i < nq; ++i) {
    for (int64_t t = t0; t < t1; ++t) {
      const uint8_t* kt = k.Row(t);
      float lanes[kLanes] = {};
      for (int j = 0; j < head_dim; ++j) {
        lanes[j % kLanes] = std::fma(qs[i][j], LoadKv(kt, j, kv_type), lanes[j % kLanes]);
      }
      s[i][t] = CombineLanes(lanes) * scale;
    }
  }
}

float AttendSoftmax(float* s, int64_t n, float softcap) {
  SoftCap(s, n, softcap);
  float mx = -INFINITY;
  for (int64_t t = 0; t < n; ++t) mx = s[t] > mx ? s[t] : mx;
  float den[kLanes] = {};
  for (int64_t t = 0; t < n; ++t) {
    s[t] = ExpF(s[t] - mx);
    den[t % kLanes] += s[t];
  }
  return CombineLanes(den);
}

void AttendValues(const float* const* e, const float* den, int nq, const KvRows& v, DType kv_type,
                  int64_t n, int j0, int j1, float* const* out) {
  for (int i = 0; i < nq; ++i) {
    float* o = out[i];
    for (int j = j0; j < j1; ++j) o[j] = 0.0f;
    for (int64_t t = 0; t < n; ++t) {
      const uint8_t* vt = v.Row(t);
      for (int j = j0; j < j1; ++j) o[j] = std::fma(e[i][t], LoadKv(vt, j, kv_type), o[j]);
    }
    for (int j = j0; j < j1; ++j) o[j] = o[j] / den[i];
  }
}

void AttendHead(const float* q, const KvRows& k, const KvRows& v, DType kv_type, int64_t n_kv,
                int head_dim, float scale, float softcap, float* out, float* scratch) {
  STET_CHECK(n_kv > 0);
  STET_CHECK(kv_type == DType::kF32 || kv_type == DType::kF16);
  AttendScores(&q, 1, k, kv_type, 0, n_kv, head_dim, scale, &scratch);
  const float den = AttendSoftmax(scratch, n_kv, softcap);
  AttendValues(&scratch, &den, 1, v, kv_type, n_kv, 0, head_dim, &out);
}

}  // namespace stet::kernels::ref
