// The compute kernels the model needs, each with a scalar reference path
// (kernels/ref/) and an AVX2+FMA path (kernels/cpu/). Every path computes the
// same bits (rule R4); every reduction's order depends only on its length
// (R1); threads split output rows/columns/heads, never a reduction (R2).
//
// The canonical orders (docs/numerics.md states them; kernels tests pin them):
//  * "8-lane sum" of a length-K product: element k goes to lane k % 8,
//    lane = fma(a_k, b_k, lane) in increasing k; lanes combine by the fixed tree
//    s4[i] = l[i] + l[i+4]; s2[i] = s4[i] + s4[i+2]; result = s2[0] + s2[1].
//  * Quantized weights (q8_0/q4_0/q4_1/q5_0/q5_1/iq4_nl): the activation row is
//    quantized per 32-block (d = amax/127, q = round-half-even(x * (1/d)), row-local,
//    R6); block b's exact int32 dot with the integer weights (q, q - 8, q - 16, or
//    iq4_nl's table value) goes to lane b % 8: lane = fma(dw*dx, float(isum), lane)
//    (q4_1/q5_1 add lane = fma(mw, dx*float(sum q), lane)); same lane tree.
//  * Super-block types (q2_k/q3_k/q4_k/q5_k/q6_k/iq4_xs): the activation is quantized
//    per 256-superblock; super-block b's exact int32 sums go to lane b % 8 the same
//    way: isum = sum_j scale_j * <q_j, qx_j> (q6_k: with q - 32; q3_k: q - 4 and
//    scales - 32; iq4_xs: table values, scales - 32) and
//    lane = fma(d*dx, float(isum), lane); q2_k/q4_k/q5_k then add their mins as
//    lane = fma(-(dmin*dx), float(sum_j min_j * sum qx_j), lane).
//  * Activation q's are clamped to [-127, 127] (only reachable for nan or a
//    block whose amax is below ~4e-37, where 1/d overflows).
#pragma once

#include <cstdint>

#include "base/cpu_features.h"
#include "kernels/kv_rows.h"
#include "numerics/dtype.h"

namespace stet {
class ThreadPool;
}

namespace stet::kernels {

// A weight matrix of `rows` output features by `cols` inputs (K), row-major,
// each row `row_bytes` long in `type`'s block format.
struct WeightView {
  DType type = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* data = nullptr;
  int64_t row_bytes = 0;
  // Optional copy of `data` in the packed layout (PackWeights), read by the AVX2
  // kernels at every batch size and by the AVX-512 ones for small batches.
  // Same numbers, same results (R4).
  const void* packed = nullptr;
};

// The row-interleaved layout for q8_0/q4_0/q4_1/q4_k/q6_k weights that the
// AVX2 kernels (decode and prefill) and the AVX-512 decode kernels stream: 16
// rows per group, per 32-block (K-quants: superblock) the 16 rows' quants 4
// bytes at a time (q8_0 stored as q + 128), then their scales (and mins) — see
// pack.cc. f16/bf16 (cols % 8 == 0) pack 8 rows per group, their 8-element
// chunks side by side, for the AVX2 float kernels. PackedBytes is 0 for types
// (or shapes) without a packed layout; PackedLayoutUsed
// says whether this CPU's best path reads it (the model packs only those). The
// packed copy is 64-byte aligned by the caller's allocation.
int64_t PackedBytes(const WeightView& w);
void PackWeights(const WeightView& w, void* dst);
bool PackedLayoutUsed(DType t);

// y[m, w.rows] = x[m, w.cols] · wᵀ. Per output the order depends on w.cols only.
// pool may be null (single thread). Threads partition w.rows.
void MatMul(const WeightView& w, const float* x, int64_t m, float* y, ThreadPool* pool, Isa isa);

// Several MatMuls of the same input (q/k/v, gate/up) in one call: the
// activation is quantized once and one parallel region covers every matrix's
// rows; y_j gets [m, ws[j]->rows]. Matrices of different types or K fall back
// to one call each. Each output is computed exactly as by MatMul.
constexpr int kMaxMatMulGroup = 4;
void MatMulGroup(const WeightView* const* ws, int n, const float* x, int64_t m, float* const* ys,
                 ThreadPool* pool, Isa isa);

// Canonical 8-lane dot product of two float vectors of length n.
float Dot(const float* a, const float* b, int64_t n, Isa isa);

// y[r] = x[r] * (1 / sqrt(mean(x[r]^2) + eps)) * w, for m rows of n. The sum of
// squares is the 8-lane sum; scale = 1.0f / sqrtf(sum / n + eps) (IEEE sqrt, div).
// y may alias x.
void RmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* y, Isa isa);

// out[i] = SiluF(gate[i]) * up[i]. out may alias gate or up.
void SwiGlu(const float* gate, const float* up, int64_t n, float* out, Isa isa);

// out[i] = a[i] + b[i]. out may alias a or b.
void Add(const float* a, const float* b, int64_t n, float* out, Isa isa);

// Rotary embedding, in place, for one token's heads x[n_heads, head_dim]. The
// first rot_dim dims of each head rotate by angles whose cos/sin are given
// (length rot_dim / 2, from a table built once in double precision). kNormal
// rotates pairs (2i, 2i+1) (GGUF llama); kNeox rotates (i, i + rot_dim/2) (qwen2/3).
// x0' = x0*c - x1*s; x1' = x0*s + x1*c, no fma.
enum class RopeStyle { kNormal, kNeox };
void Rope(float* x, int n_heads, int head_dim, int rot_dim, const float* cos, const float* sin,
          RopeStyle style, Isa isa);

// Converts a row of floats into the KV cache's storage type (f32 or f16; f16
// rounds to nearest even). Attention reads back what this wrote (rule R3).
void StoreRow(const float* x, int64_t n, DType dst_type, void* dst, Isa isa);

// Attention of one query head over KV positions [0, n_kv) of one KV head,
// read through k/v (kv_rows.h: a paged block table or a contiguous run; the
// layout never changes a bit). s_t = Dot(q, k_t) * scale; m = max s_t; e_t =
// ExpF(s_t - m); denominator is the 8-lane sum of e_t (lane t % 8); out[d]
// accumulates fma(e_t, v_t[d], out[d]) for t = 0, 1, ...; finally out[d] /=
// denominator. Needs scratch[n_kv].
void AttendHead(const float* q, const KvRows& k, const KvRows& v, DType kv_type, int64_t n_kv,
                int head_dim, float scale, float* out, float* scratch, Isa isa);

// AttendHead for two queries over the same K/V rows (two heads of one KV group,
// or two tokens of one sequence: n_kv0 and n_kv1 may differ). Results are
// exactly those of two AttendHead calls; the AVX-512 path shares each K/V load
// between both. Needs scratch[2 * max(n_kv0, n_kv1) + 2 * head_dim].
void AttendHeadPair(const float* q0, const float* q1, const KvRows& k, const KvRows& v,
                    DType kv_type, int64_t n_kv0, int64_t n_kv1, int head_dim, float scale,
                    float* out0, float* out1, float* scratch, Isa isa);

}  // namespace stet::kernels
