// Scalar reference AttendHead. Numerics: s_t = Dot8(q, k_t) * scale (then
// SoftCap when softcap > 0); max; e_t =
// ExpF(s_t - max); denominator = 8-lane sum of e_t (lane t%8, plain adds, fixed
// tree); out[d] = fma(e_t, v_t[d], out[d]) for t = 0, 1, ..., then / denominator.
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

void AttendHead(const float* q, const KvRows& k, const KvRows& v, DType kv_type, int64_t n_kv,
                int head_dim, float scale, float softcap, float* out, float* scratch) {
  STET_CHECK(n_kv > 0);
  STET_CHECK(kv_type == DType::kF32 || kv_type == DType::kF16);
  for (int64_t t = 0; t < n_kv; ++t) {
    const uint8_t* kt = k.Row(t);
    float lanes[kLanes] = {};
    for (int j = 0; j < head_dim; ++j) {
      lanes[j % kLanes] = std::fma(q[j], LoadKv(kt, j, kv_type), lanes[j % kLanes]);
    }
    scratch[t] = CombineLanes(lanes) * scale;
  }
  SoftCap(scratch, n_kv, softcap);
  float mx = -INFINITY;
  for (int64_t t = 0; t < n_kv; ++t) mx = scratch[t] > mx ? scratch[t] : mx;
  float den[kLanes] = {};
  for (int64_t t = 0; t < n_kv; ++t) {
    scratch[t] = ExpF(scratch[t] - mx);
    den[t % kLanes] += scratch[t];
  }
  const float denominator = CombineLanes(den);
  for (int j = 0; j < head_dim; ++j) out[j] = 0.0f;
  for (int64_t t = 0; t < n_kv; ++t) {
    const uint8_t* vt = v.Row(t);
    for (int j = 0; j < head_dim; ++j)
      out[j] = std::fma(scratch[t], LoadKv(vt, j, kv_type), out[j]);
  }
  for (int j = 0; j < head_dim; ++j) out[j] = out[j] / denominator;
}

}  // namespace stet::kernels::ref
