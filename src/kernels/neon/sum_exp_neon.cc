// NEON SumExpShifted, as cpu/sum_exp_avx2.cc with 4 lanes: the exps with ExpF4
// (lane for lane ExpF's bits) of y = x - shift, added into one float s one by
// one in index order; per chunk of 64 elements, an e below SumSkipBelow(s)
// cannot change s and is left out, and a vector whose every y is below
// SumSkipArgBelow has its exps not computed (internal.h). Chunk c + 1 is
// tested against the bound of s before chunk c's adds (an older bound is as
// exact), so its exps need not wait for them. Equal to ref/sum_exp.cc bit for
// bit (sum_exp_test.cc).
#include "kernels/neon/neon_util.h"
#include "numerics/math_neon.h"

namespace stet::kernels::neon {

namespace {

constexpr int kChunk = 64;  // elements tested against one bound
constexpr int kVecs = kChunk / 4;

// The vectors of x[0, 64) with a lane whose y is not below arg_below (NaN included).
inline uint32_t VectorsToExp(const float* x, float32x4_t sh, float32x4_t arg_below) {
  uint32_t need = 0;
  for (int v = 0; v < kVecs; ++v) {
    const float32x4_t y = vsubq_f32(vld1q_f32(x + 4 * v), sh);
    // y < arg_below is false for NaN: such a vector is computed.
    need |= (vminvq_u32(vcltq_f32(y, arg_below)) == 0 ? 1u : 0u) << v;
  }
  return need;
}

// The exps of the `need` vectors of x[0, 64) into e; returns the lanes that may
// change the sum (not e < below: NaNs are kept, and every lane while below is 0).
inline uint64_t ExpChunk(const float* x, float32x4_t sh, float32x4_t below, uint32_t need,
                         float* e) {
  // Lane j of a compare result, as bit j.
  const uint32x4_t lane_bit = {1, 2, 4, 8};
  uint64_t keep = 0;
  while (need != 0) {
    const int v = __builtin_ctz(need);
    need &= need - 1;
    const float32x4_t ev = ExpF4(vsubq_f32(vld1q_f32(x + 4 * v), sh));
    vst1q_f32(e + 4 * v, ev);
    const uint32x4_t skip = vcltq_f32(ev, below);
    const uint64_t bits = vaddvq_u32(vbicq_u32(lane_bit, skip));
    keep |= bits << (4 * v);
  }
  return keep;
}

// Tests chunk x[0, 64) against the bound of a sum s: its e's into e, the lanes
// to add returned.
inline uint64_t PrepareChunk(const float* x, float32x4_t sh, float s, float* e) {
  const float below = SumSkipBelow(s);
  const uint32_t need = VectorsToExp(x, sh, vdupq_n_f32(SumSkipArgBelow(below)));
  return need == 0 ? 0 : ExpChunk(x, sh, vdupq_n_f32(below), need, e);
}

}  // namespace

float SumExpShifted(const float* x, int64_t n, float shift) {
  const float32x4_t sh = vdupq_n_f32(shift);
  float s = 0.0f;
  const int64_t chunks = n / kChunk;
  alignas(16) float e[2][kChunk];
  uint64_t keep = chunks > 0 ? PrepareChunk(x, sh, s, e[0]) : 0;
  for (int64_t c = 0; c < chunks; ++c) {
    const uint64_t next =
        c + 1 < chunks ? PrepareChunk(x + (c + 1) * kChunk, sh, s, e[(c + 1) & 1]) : 0;
    const float* ec = e[c & 1];
    while (keep != 0) {
      s += ec[__builtin_ctzll(keep)];
      keep &= keep - 1;
    }
    keep = next;
  }
  for (int64_t i = chunks * kChunk; i < n; ++i) s += ExpF(x[i] - shift);
  return s;
}

}  // namespace stet::kernels::neon
