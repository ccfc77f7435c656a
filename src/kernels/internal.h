// Shared between kernels.cc (dispatch), kernels/ref (the scalar oracle) and
// kernels/cpu (AVX2): the quantized-activation layouts, the canonical 8-lane
// combine, and each path's entry points. Tests include it to pin the
// activation quantization (rule R6) and the per-type canonical orders.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace stet::kernels {

constexpr int kLanes = 8;  // the logical accumulator width on every path (rule R4)

// The fixed lane tree: s4[i] = l[i] + l[i+4]; s2[i] = s4[i] + s4[i+2]; s2[0] + s2[1].
inline float CombineLanes(const float* l) {
  const float s0 = l[0] + l[4], s1 = l[1] + l[5], s2 = l[2] + l[6], s3 = l[3] + l[7];
  const float t0 = s0 + s2, t1 = s1 + s3;
  return t0 + t1;
}

// Activation rows quantized per 32-block for q8_0/q4_0/q4_1 weights. For block
// b of row r: d = amax/127, id = d != 0 ? 1/d : 0, q = nearbyint(x * id) (ties
// to even), qsum = sum q, s = d * float(qsum). Each row is padded with zero
// blocks to a multiple of 8 blocks so the SIMD path can always work on 8.
struct ActQ8 {
  int64_t m = 0, k = 0;
  int64_t nb = 0;           // blocks per row (k / 32)
  int64_t nb_pad = 0;       // nb rounded up to a multiple of 8: the row stride in blocks
  int8_t* qs = nullptr;     // [m][nb_pad * 32]
  float* d = nullptr;       // [m][nb_pad]
  float* s = nullptr;       // [m][nb_pad]
  int32_t* qsum = nullptr;  // [m][nb_pad]
};

// Activation rows quantized per 256-superblock for the K-quants: one d per
// superblock (same formula as ActQ8) and the exact int sums of each 16 q's.
struct ActQ8K {
  int64_t m = 0, k = 0;
  int64_t nsb = 0;           // superblocks per row (k / 256)
  int8_t* qs = nullptr;      // [m][k]
  float* d = nullptr;        // [m][nsb]
  int16_t* bsums = nullptr;  // [m][nsb * 16]
};

// Lays out `act` for m rows of k in `storage` (grown as needed, never shrunk).
void PrepareActQ8(int64_t m, int64_t k, std::vector<uint8_t>* storage, ActQ8* act);
void PrepareActQ8K(int64_t m, int64_t k, std::vector<uint8_t>* storage, ActQ8K* act);

// y[i * ldy + r] for activation rows i < m and weight rows r in [r0, r1).
struct MatMulArgs {
  const WeightView* w;
  const float* x;     // [m][w.cols], for f32/f16/bf16 weights
  const ActQ8* a8;    // for q8_0/q4_0/q4_1
  const ActQ8K* a8k;  // for the K-quants
  int64_t m;
  float* y;
};

namespace ref {
void QuantizeActQ8(const float* x, ActQ8* act);  // all act->m rows
void QuantizeActQ8K(const float* x, ActQ8K* act);
void MatMulFloatRows(const MatMulArgs& a, int64_t r0, int64_t r1);
void MatMulQ8Rows(const MatMulArgs& a, int64_t r0, int64_t r1);  // q8_0, q4_0, q4_1
void MatMulQKRows(const MatMulArgs& a, int64_t r0, int64_t r1);  // q4_k, q5_k, q6_k
float Dot(const float* a, const float* b, int64_t n);
void RmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* y);
void SwiGlu(const float* gate, const float* up, int64_t n, float* out);
void Add(const float* a, const float* b, int64_t n, float* out);
void Rope(float* x, int n_heads, int head_dim, int rot_dim, const float* cos, const float* sin,
          RopeStyle style);
void StoreRow(const float* x, int64_t n, DType dst_type, void* dst);
void AttendHead(const float* q, const void* k, const void* v, DType kv_type,
                int64_t kv_stride_bytes, int64_t n_kv, int head_dim, float scale, float* out,
                float* scratch);
}  // namespace ref

namespace avx2 {
void QuantizeActQ8(const float* x, ActQ8* act);
void QuantizeActQ8K(const float* x, ActQ8K* act);
void MatMulFloatRows(const MatMulArgs& a, int64_t r0, int64_t r1);
void MatMulQ8Rows(const MatMulArgs& a, int64_t r0, int64_t r1);
void MatMulQKRows(const MatMulArgs& a, int64_t r0, int64_t r1);
float Dot(const float* a, const float* b, int64_t n);
void RmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* y);
void SwiGlu(const float* gate, const float* up, int64_t n, float* out);
void Add(const float* a, const float* b, int64_t n, float* out);
void Rope(float* x, int n_heads, int head_dim, int rot_dim, const float* cos, const float* sin,
          RopeStyle style);
void StoreRow(const float* x, int64_t n, DType dst_type, void* dst);
void AttendHead(const float* q, const void* k, const void* v, DType kv_type,
                int64_t kv_stride_bytes, int64_t n_kv, int head_dim, float scale, float* out,
                float* scratch);
}  // namespace avx2

}  // namespace stet::kernels
