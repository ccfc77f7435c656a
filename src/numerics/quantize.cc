// Reference quantizers (see quantize.h). q8_0/q4_0/q4_1/q5_0/q5_1/iq4_nl reproduce
// ggml's quantize_row_*_ref; the K-quants and iq4_xs choose scales by min/max or absmax
// with every stored scale rounded up, so no element is clipped and the error bound is
// closed-form. Packing of the scales and high bits follows ggml's layouts exactly. Each
// type's entry point (codecs.h) is named in its row of dtype.cc's table.
#include "numerics/quantize.h"

#include <cstring>
#include <string>
#include <type_traits>

#include "numerics/codecs.h"
#include "numerics/half.h"

namespace stet {
namespace {

bool Finite(float x) { return x - x == 0.0f; }
float AbsF(float x) { return x < 0.0f ? -x : x; }

// roundf: nearest, ties away from zero; exact for |v| < 2^23.
int RoundHalfAway(float v) {
  const float t = static_cast<float>(static_cast<int>(v));  // truncation, exact
  const float frac = v - t;                                 // exact
  if (frac >= 0.5f) return static_cast<int>(t) + 1;
  if (frac <= -0.5f) return static_cast<int>(t) - 1;
  return static_cast<int>(t);
}

// Smallest integer >= v, for 0 <= v < 2^23.
int CeilNonNeg(float v) {
  const int t = static_cast<int>(v);
  return static_cast<float>(t) < v ? t + 1 : t;
}

int Clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// The smallest f16 >= v (v >= 0 finite); false if that is infinite.
bool F16RoundUp(float v, uint16_t* out) {
  uint16_t h = F32ToF16(v);
  if (F16ToF32(h) < v) ++h;  // positive f16 bit patterns are ordered like their values
  *out = h;
  return h < 0x7c00;
}

// The element of largest magnitude, the first one on ties (q4_0, q5_0 and
// iq4_nl scale from it, sign included).
float SignedAbsMax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < AbsF(x[j])) {
      amax = AbsF(x[j]);
      max = x[j];
    }
  }
  return max;
}

void MinMax(const float* x, int n, float* min, float* max) {
  *min = x[0];
  *max = x[0];
  for (int j = 1; j < n; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > *max) *max = x[j];
  }
}

// An f16 scale that overflowed (inf, or nan from inf - inf).
bool F16NotFinite(uint16_t h) { return (h & 0x7fff) >= 0x7c00; }

Status ScaleOverflow(const char* type, int64_t block) {
  return InvalidArgument(std::string(type) + " block " + std::to_string(block) +
                         ": scale does not fit in f16 (inputs too large)");
}

Status QuantizeBlocks(const float* x, int64_t nb, BlockQ8_0* y) {
  for (int64_t i = 0; i < nb; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = amax > AbsF(x[j]) ? amax : AbsF(x[j]);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = F32ToF16(d);
    if (F16NotFinite(y[i].d)) return ScaleOverflow("q8_0", i);  // -0.0 (all -0 inputs) fits
    for (int j = 0; j < kQK; ++j) y[i].qs[j] = static_cast<int8_t>(RoundHalfAway(x[j] * id));
  }
  return Status::Ok();
}

// q4_0 / q4_1 / q5_0 / q5_1, exactly as ggml's quantize_row_q{4,5}_{0,1}_ref: the
// low nibbles packed as element j | element j + 16 << 4, q5's fifth bits into the qh
// word (bit e for element e).
template <typename Block>
constexpr bool kWithMin = std::is_same_v<Block, BlockQ4_1> || std::is_same_v<Block, BlockQ5_1>;
template <typename Block>
constexpr bool kFiveBits = std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>;

template <typename Block>
void PackQuants(const int* q, Block* y) {
  uint32_t qh = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    y->qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kQK / 2] & 0x0F) << 4));
    qh |= static_cast<uint32_t>((q[j] & 0x10) >> 4) << j;
    qh |= static_cast<uint32_t>((q[j + kQK / 2] & 0x10) >> 4) << (j + kQK / 2);
  }
  if constexpr (kFiveBits<Block>) std::memcpy(y->qh, &qh, 4);
}

template <typename Block>
Status QuantizeQ45(const float* x, int64_t nb, Block* y, const char* name) {
  constexpr int kMaxQ = kFiveBits<Block> ? 31 : 15;
  constexpr float kHalf = (kMaxQ + 1) / 2;  // q4_0: 8, q5_0: 16
  for (int64_t i = 0; i < nb; ++i, x += kQK) {
    float min = 0.0f, d;
    if constexpr (kWithMin<Block>) {
      float max;
      MinMax(x, kQK, &min, &max);
      d = (max - min) / static_cast<float>(kMaxQ);
    } else {
      // The element of largest magnitude (first one on ties) maps to q = 0, i.e. -kHalf d.
      d = SignedAbsMax(x, kQK) / -kHalf;
    }
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = F32ToF16(d);
    bool bad = F16NotFinite(y[i].d);
    if constexpr (kWithMin<Block>) {
      y[i].m = F32ToF16(min);
      bad = bad || F16NotFinite(y[i].m);
    }
    if (bad) return ScaleOverflow(name, i);
    int q[kQK];
    for (int j = 0; j < kQK; ++j) {
      if constexpr (!kWithMin<Block>) {
        // Truncating casts as in ggml: x*id + kHalf + 0.5 lies in [0, 2 kHalf + 0.5].
        q[j] = Clamp(static_cast<int8_t>(x[j] * id + (kHalf + 0.5f)), 0, kMaxQ);
      } else if constexpr (!kFiveBits<Block>) {
        q[j] = Clamp(static_cast<int8_t>((x[j] - min) * id + 0.5f), 0, kMaxQ);
      } else {
        // ggml truncates without a clamp; (x - min) * id + 0.5 lies in [0.5, 31.5].
        q[j] = static_cast<int>((x[j] - min) * id + 0.5f) & 31;
      }
    }
    PackQuants(q, &y[i]);
  }
  return Status::Ok();
}

Status QuantizeBlocks(const float* x, int64_t nb, BlockQ4_0* y) {
  return QuantizeQ45(x, nb, y, "q4_0");
}
Status QuantizeBlocks(const float* x, int64_t nb, BlockQ4_1* y) {
  return QuantizeQ45(x, nb, y, "q4_1");
}
Status QuantizeBlocks(const float* x, int64_t nb, BlockQ5_0* y) {
  return QuantizeQ45(x, nb, y, "q5_0");
}
Status QuantizeBlocks(const float* x, int64_t nb, BlockQ5_1* y) {
  return QuantizeQ45(x, nb, y, "q5_1");
}

// The index of the kIQ4NLValues entry nearest v (ggml's best_index_int8: binary search,
// then the lower neighbour only when strictly nearer).
int NearestIQ4(float v) {
  const int8_t* k = kIQ4NLValues;
  if (v <= k[0]) return 0;
  if (v >= k[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < k[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return v - k[hi - 1] < k[hi] - v ? hi - 1 : hi;
}

// sum w*q*x and sum w*q*q over one block for the levels nearest x * id, with ggml's
// weights when no importance matrix is given (w = x*x).
void IQ4Sums(const float* x, float id, float* sumqx, float* sumq2) {
  float sqx = 0.0f, sq2 = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    const int l = NearestIQ4(id * x[j]);
    const float q = static_cast<float>(kIQ4NLValues[l]);
    const float w = x[j] * x[j];
    const float wq = w * q;
    sqx = sqx + wq * x[j];
    sq2 = sq2 + wq * q;
  }
  *sumqx = sqx;
  *sumq2 = sq2;
}

// ggml's quantize_row_iq4_nl_ref (quantize_row_iq4_nl_impl with one 32-block, no
// importance weights, ntry = 7): start from the scale that maps the largest magnitude to
// -127, refine by weighted least squares, try 15 nearby starting scales and keep the best
// sum(w q x)^2 / sum(w q^2). Evaluated without FMA contraction, in ggml's order.
Status QuantizeBlocks(const float* x, int64_t nb, BlockIQ4_NL* y) {
  constexpr int kTry = 7;
  constexpr float kGroupMaxEps = 1e-15f;
  for (int64_t i = 0; i < nb; ++i, x += kQK) {
    const float max = SignedAbsMax(x, kQK), amax = AbsF(max);
    float scale = 0.0f;
    if (amax >= kGroupMaxEps) {
      const float v0 = static_cast<float>(kIQ4NLValues[0]);
      const float d0 = -max / v0;
      float sumqx, sumq2;
      IQ4Sums(x, 1.0f / d0, &sumqx, &sumq2);
      float d = sumqx / sumq2;
      float best = d * sumqx;
      for (int itry = -kTry; itry <= kTry; ++itry) {
        const float id = static_cast<float>(itry + kIQ4NLValues[0]) / max;
        IQ4Sums(x, id, &sumqx, &sumq2);
        if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
          d = sumqx / sumq2;
          best = d * sumqx;
        }
      }
      scale = d;
    }
    y[i].d = F32ToF16(scale);
    if (F16NotFinite(y[i].d)) return ScaleOverflow("iq4_nl", i);
    const float id = scale != 0.0f ? 1.0f / scale : 0.0f;
    for (int j = 0; j < kQK / 2; ++j) {
      const int l0 = NearestIQ4(id * x[j]);
      const int l1 = NearestIQ4(id * x[j + kQK / 2]);
      y[i].qs[j] = static_cast<uint8_t>(l0 | (l1 << 4));
    }
  }
  return Status::Ok();
}

// A min/max K-quant super-block: n_sub sub-blocks of `sub` elements, x = (d*sc)*q - dmin*m
// with q in [0, levels] and sc, m in [0, scale_max]. Fills d, dmin, the per-sub-block
// scales ls and mins lm, and the quants L; the caller packs them.
struct KMinMax {
  int sub, n_sub, scale_max, levels;
};

bool QuantizeKMinMax(const float* x, KMinMax k, uint16_t* d_out, uint16_t* dmin_out, int* ls,
                     int* lm, uint8_t* L) {
  float neg_min[kQKK / 16], hi[kQKK / 16];
  float max_neg_min = 0.0f;
  for (int j = 0; j < k.n_sub; ++j) {
    float lo = 0.0f, h = x[k.sub * j];
    for (int l = 0; l < k.sub; ++l) {
      const float v = x[k.sub * j + l];
      if (v < lo) lo = v;
      if (v > h) h = v;
    }
    neg_min[j] = -lo;  // >= 0: the format subtracts a non-negative offset
    hi[j] = h;
    if (neg_min[j] > max_neg_min) max_neg_min = neg_min[j];
  }
  const float scale_max = static_cast<float>(k.scale_max);
  // Mins first, rounded up, so the offset -dmin*m never lies above a sub-block's minimum.
  uint16_t dmin16;
  if (!F16RoundUp(max_neg_min / scale_max, &dmin16)) return false;
  const float dmin = F16ToF32(dmin16);
  float off[kQKK / 16], need[kQKK / 16];
  float max_need = 0.0f;
  for (int j = 0; j < k.n_sub; ++j) {
    lm[j] = dmin > 0.0f ? Clamp(CeilNonNeg(neg_min[j] / dmin), 0, k.scale_max) : 0;
    off[j] = dmin * static_cast<float>(lm[j]);
    need[j] = (hi[j] + off[j]) / static_cast<float>(k.levels);
    if (need[j] < 0.0f) need[j] = 0.0f;
    if (need[j] > max_need) max_need = need[j];
  }
  uint16_t d16;
  if (!F16RoundUp(max_need / scale_max, &d16)) return false;
  const float d = F16ToF32(d16);
  for (int j = 0; j < k.n_sub; ++j) {
    ls[j] = d > 0.0f ? Clamp(CeilNonNeg(need[j] / d), 0, k.scale_max) : 0;
    const float scale = d * static_cast<float>(ls[j]);
    for (int l = 0; l < k.sub; ++l) {
      const int q = scale > 0.0f ? RoundHalfAway((x[k.sub * j + l] + off[j]) / scale) : 0;
      L[k.sub * j + l] = static_cast<uint8_t>(Clamp(q, 0, k.levels));
    }
  }
  *d_out = d16;
  *dmin_out = dmin16;
  return true;
}

// q4_k / q5_k: 8 sub-blocks of 32, 6-bit scales and mins in ggml's get_scale_min_k4
// layout: sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scale) and 4-7 (min);
// sub-blocks 4-7 as nibbles in bytes 8-11 plus 2 high bits each in the top of bytes
// 0-3 (scale) and 4-7 (min).
bool QuantizeK4(const float* x, int levels, uint16_t* d, uint16_t* dmin,
                uint8_t scales[kKScaleSize], uint8_t L[kQKK]) {
  int ls[8], lm[8];
  if (!QuantizeKMinMax(x, {32, 8, 63, levels}, d, dmin, ls, lm, L)) return false;
  std::memset(scales, 0, kKScaleSize);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = static_cast<uint8_t>(ls[j]);
      scales[j + 4] = static_cast<uint8_t>(lm[j]);
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      scales[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
  return true;
}

Status QuantizeBlocks(const float* x, int64_t nb, BlockQ4_K* y) {
  uint8_t L[kQKK];
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    if (!QuantizeK4(x, 15, &y[i].d, &y[i].dmin, y[i].scales, L)) {
      return ScaleOverflow("q4_k", i);
    }
    // Each 64-element chunk: 32 bytes, low nibble = element l, high = element l + 32.
    for (int c = 0; c < kQKK / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        y[i].qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
      }
    }
  }
  return Status::Ok();
}

Status QuantizeBlocks(const float* x, int64_t nb, BlockQ5_K* y) {
  uint8_t L[kQKK];
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    if (!QuantizeK4(x, 31, &y[i].d, &y[i].dmin, y[i].scales, L)) {
      return ScaleOverflow("q5_k", i);
    }
    // Low 4 bits as in q4_k; bit 4 of chunk c's elements goes to qh[l], bit 2c (first
    // 32) or 2c + 1 (second 32).
    std::memset(y[i].qh, 0, sizeof(y[i].qh));
    for (int c = 0; c < kQKK / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int a = L[64 * c + l], b = L[64 * c + 32 + l];
        y[i].qs[32 * c + l] = static_cast<uint8_t>((a & 0xF) | ((b & 0xF) << 4));
        y[i].qh[l] |= static_cast<uint8_t>(((a >> 4) << (2 * c)) | ((b >> 4) << (2 * c + 1)));
      }
    }
  }
  return Status::Ok();
}

// One sub-block's 16 codes: q = round(x / scale) (0 where scale is 0), clamped to
// [lo, hi], stored as q - lo.
void Codes16(const float* x, float scale, int lo, int hi, uint8_t* L) {
  for (int l = 0; l < 16; ++l) {
    const int q = scale > 0.0f ? RoundHalfAway(x[l] / scale) : 0;
    L[l] = static_cast<uint8_t>(Clamp(q, lo, hi) - lo);
  }
}

// q6_k and q3_k scale each 16-element sub-block k symmetrically: x = (d * sc_k) * q
// with |q| <= qmax and sc_k in [0, scmax]. need_k = amax_k / qmax; d is the f16
// rounded up from max_k need_k / scmax, and sc_k = ceil(need_k / d), so no q clips.
// Sets *d16, sc[kSub16] and the codes L[kQKK] (q + qmax + 1, Codes16); false where d
// overflows f16.
constexpr int kSub16 = kQKK / 16;
bool SymmetricQuantize16(const float* x, int qmax, int scmax, uint16_t* d16, int* sc, uint8_t* L) {
  float need[kSub16];
  float max_need = 0.0f;
  for (int k = 0; k < kSub16; ++k) {
    float amax = 0.0f;
    for (int l = 0; l < 16; ++l) amax = amax > AbsF(x[16 * k + l]) ? amax : AbsF(x[16 * k + l]);
    need[k] = amax / static_cast<float>(qmax);
    if (need[k] > max_need) max_need = need[k];
  }
  if (!F16RoundUp(max_need / static_cast<float>(scmax), d16)) return false;
  const float d = F16ToF32(*d16);
  for (int k = 0; k < kSub16; ++k) {
    sc[k] = d > 0.0f ? Clamp(CeilNonNeg(need[k] / d), 0, scmax) : 0;
    Codes16(x + 16 * k, d * static_cast<float>(sc[k]), -qmax - 1, qmax, L + 16 * k);
  }
  return true;
}

Status QuantizeBlocks(const float* x, int64_t nb, BlockQ6_K* y) {
  uint8_t L[kQKK];
  int sc[kSub16];
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    // q in [-32, 31]; only [-31, 31] is used so the scale is symmetric.
    if (!SymmetricQuantize16(x, 31, 127, &y[i].d, sc, L)) return ScaleOverflow("q6_k", i);
    for (int k = 0; k < kSub16; ++k) y[i].scales[k] = static_cast<int8_t>(sc[k]);
    // Per 128-element half h: ql[64h + l] holds elements l (low) and l + 64 (high),
    // ql[64h + 32 + l] elements l + 32 and l + 96; qh[32h + l] their 2-bit tops in order.
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = L + 128 * h;
      uint8_t* ql = y[i].ql + 64 * h;
      uint8_t* qh = y[i].qh + 32 * h;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) |
                                     ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
      }
    }
  }
  return Status::Ok();
}

Status QuantizeBlocks(const float* x, int64_t nb, BlockQ2_K* y) {
  uint8_t L[kQKK];
  int ls[16], lm[16];
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    if (!QuantizeKMinMax(x, {16, 16, 15, 3}, &y[i].d, &y[i].dmin, ls, lm, L)) {
      return ScaleOverflow("q2_k", i);
    }
    for (int j = 0; j < 16; ++j) y[i].scales[j] = static_cast<uint8_t>(ls[j] | (lm[j] << 4));
    // Per 128-element half h: qs[32h + l] holds elements 128h + 32g + l in bits 2g..2g+1.
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t* q = L + 128 * h + l;
        y[i].qs[32 * h + l] =
            static_cast<uint8_t>(q[0] | (q[32] << 2) | (q[64] << 4) | (q[96] << 6));
      }
    }
  }
  return Status::Ok();
}

Status QuantizeBlocks(const float* x, int64_t nb, BlockQ3_K* y) {
  uint8_t L[kQKK];
  int sc[kSub16];
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    // q in [-4, 3]; as q6_k only [-3, 3] and sc in [0, 31] are used, so the scale is
    // symmetric and never clips.
    if (!SymmetricQuantize16(x, 3, 31, &y[i].d, sc, L)) return ScaleOverflow("q3_k", i);
    std::memset(y[i].scales, 0, sizeof(y[i].scales));
    for (int k = 0; k < kSub16; ++k) {
      const int stored = sc[k] + 32;  // 6 bits: low nibble, then 2 high bits
      if (k < 8) {
        y[i].scales[k] |= static_cast<uint8_t>(stored & 0xF);
      } else {
        y[i].scales[k - 8] |= static_cast<uint8_t>((stored & 0xF) << 4);
      }
      y[i].scales[8 + k % 4] |= static_cast<uint8_t>((stored >> 4) << (2 * (k / 4)));
    }
    // Low two bits as q2_k's; the third bit of element 128h + 32g + l is bit 4h + g of
    // hmask[l] (set: no -4 offset).
    std::memset(y[i].hmask, 0, sizeof(y[i].hmask));
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t* q = L + 128 * h + l;
        y[i].qs[32 * h + l] = static_cast<uint8_t>((q[0] & 3) | ((q[32] & 3) << 2) |
                                                   ((q[64] & 3) << 4) | ((q[96] & 3) << 6));
        for (int g = 0; g < 4; ++g) {
          y[i].hmask[l] |= static_cast<uint8_t>((q[32 * g] >> 2) << (4 * h + g));
        }
      }
    }
  }
  return Status::Ok();
}

Status QuantizeBlocks(const float* x, int64_t nb, BlockIQ4_XS* y) {
  constexpr int kSub = kQKK / 32;
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    // Sub-block j's scale d*ls_j maps its largest magnitude to -127, the far end of the
    // levels; |ls_j| is rounded up (never clips) and its sign flips the levels to match.
    float need[kSub], max_need = 0.0f;
    bool positive_max[kSub];
    for (int j = 0; j < kSub; ++j) {
      float amax = 0.0f, max = 0.0f;
      for (int l = 0; l < 32; ++l) {
        if (AbsF(x[32 * j + l]) > amax) {
          amax = AbsF(x[32 * j + l]);
          max = x[32 * j + l];
        }
      }
      need[j] = amax / 127.0f;
      positive_max[j] = max > 0.0f;
      if (need[j] > max_need) max_need = need[j];
    }
    uint16_t d16;
    if (!F16RoundUp(max_need / 31.0f, &d16)) return ScaleOverflow("iq4_xs", i);
    const float d = F16ToF32(d16);
    y[i].d = d16;
    y[i].scales_h = 0;
    std::memset(y[i].scales_l, 0, sizeof(y[i].scales_l));
    for (int j = 0; j < kSub; ++j) {
      const int mag = d > 0.0f ? Clamp(CeilNonNeg(need[j] / d), 0, 31) : 0;
      const int ls = positive_max[j] ? -mag : mag;
      const int stored = ls + 32;
      y[i].scales_l[j / 2] |= static_cast<uint8_t>((stored & 0xF) << (4 * (j % 2)));
      y[i].scales_h = static_cast<uint16_t>(y[i].scales_h | ((stored >> 4) << (2 * j)));
      const float dl = d * static_cast<float>(ls);
      const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
      for (int l = 0; l < 16; ++l) {
        const int l0 = NearestIQ4(idl * x[32 * j + l]);
        const int l1 = NearestIQ4(idl * x[32 * j + 16 + l]);
        y[i].qs[16 * j + l] = static_cast<uint8_t>(l0 | (l1 << 4));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

namespace codecs {

Status QuantizeF32(const float* x, int64_t n, void* y) {
  if (n > 0) std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
  return Status::Ok();
}

Status QuantizeF16(const float* x, int64_t n, void* y) {
  auto* out = static_cast<uint16_t*>(y);
  for (int64_t i = 0; i < n; ++i) out[i] = F32ToF16(x[i]);
  return Status::Ok();
}

Status QuantizeBF16(const float* x, int64_t n, void* y) {
  auto* out = static_cast<uint16_t*>(y);
  for (int64_t i = 0; i < n; ++i) out[i] = F32ToBF16(x[i]);
  return Status::Ok();
}

#define STET_QUANTIZER(T)                                    \
  Status Quantize##T(const float* x, int64_t nb, void* y) {  \
    return QuantizeBlocks(x, nb, static_cast<Block##T*>(y)); \
  }
STET_QUANTIZER(Q8_0)
STET_QUANTIZER(Q4_0)
STET_QUANTIZER(Q4_1)
STET_QUANTIZER(Q5_0)
STET_QUANTIZER(Q5_1)
STET_QUANTIZER(IQ4_NL)
STET_QUANTIZER(Q2_K)
STET_QUANTIZER(Q3_K)
STET_QUANTIZER(Q4_K)
STET_QUANTIZER(Q5_K)
STET_QUANTIZER(Q6_K)
STET_QUANTIZER(IQ4_XS)
#undef STET_QUANTIZER

}  // namespace codecs

Status QuantizeRow(DType type, const float* src, int64_t n, void* dst) {
  const auto traits = GetDTypeTraits(static_cast<uint32_t>(type));
  if (!traits) {
    return Unimplemented("no quantizer for type id " + std::to_string(static_cast<uint32_t>(type)));
  }
  if (n < 0 || n % traits->block_elems != 0) {
    return InvalidArgument(std::string("row of ") + std::to_string(n) + " elements for " +
                           traits->name + ": must be a multiple of " +
                           std::to_string(traits->block_elems));
  }
  if (traits->quantize == nullptr) {
    return Unimplemented(std::string("no quantizer for ") + traits->name +
                         " (supported: " + SupportedDTypeList() + ")");
  }
  if (traits->block_elems > 1) {  // plain types round inf and nan like any other value
    for (int64_t i = 0; i < n; ++i) {
      if (!Finite(src[i])) {
        return InvalidArgument(std::string("cannot quantize a non-finite value to ") +
                               traits->name + " (element " + std::to_string(i) + ")");
      }
    }
  }
  return traits->quantize(src, n / traits->block_elems, dst);
}

}  // namespace stet
