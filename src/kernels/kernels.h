// The compute kernels the model needs: each op has a scalar reference path
// (kernels/ref/) and an AVX2+FMA path (kernels/x86/*_avx2.cc); MatMul (batched,
// and decode over the packed layout below) and paired attention also have
// AVX-512 VNNI paths (kernels/x86/*_avx512.cc); on aarch64 a NEON path
// (kernels/neon/, Isa::kNeon; ops without one run ref/). Every path computes the same
// bits (rule R4); every reduction's order depends only on its length (R1);
// threads split output rows/columns/heads, never a reduction (R2). The path is
// chosen by the explicit Isa and by shape (rows, weight type, packed copy) —
// never in a way that changes a bit.
//
// The canonical orders — the 8-lane sum and its fixed lane tree, the quantized
// block and K-quant superblock dots, the activation clamp — are stated once, in
// docs/numerics.md (R1 and "Quantized dot products in detail"); the tests in
// tests/kernels pin them, and each kernel file says how it keeps them.
#pragma once

#include <cstdint>

#include "base/cpu_features.h"
#include "kernels/kv_rows.h"
#include "numerics/dtype.h"

namespace stet {
class ThreadPool;
}

namespace stet::kernels {

class MatMulPlan;  // matmul_table.h

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
  // Under Isa::kAuto, the rows that serve this matrix (its model's plan, chosen by
  // measurement); null: the best ISA's rows. Never changes a bit.
  const MatMulPlan* plan = nullptr;
};

// The row-interleaved layout for q8_0/q4_0/q4_1/q5_0/q5_1/q4_k/q6_k weights that
// the AVX2 kernels (decode and prefill) and the AVX-512 decode kernels stream: 16
// rows per group, per 32-block (K-quants: superblock) the 16 rows' quants 4
// bytes at a time (q8_0 stored as q + 128), then their scales (and mins; q5's
// fifth bits last, a byte per row and word) — see pack.cc. f16/bf16 (cols % 8 == 0) pack 8 rows per
// group, their 8-element chunks side by side, for the AVX2 float kernels. PackedBytes is 0 for
// types (or shapes) without a packed layout; PackedLayoutUsed says whether this CPU's best path
// reads it (the model packs only those). The packed copy is 64-byte aligned by the caller's
// allocation.
int64_t PackedBytes(const WeightView& w);
void PackWeights(const WeightView& w, void* dst);
bool PackedLayoutUsed(DType t);

// y[m, w.rows] = x[m, w.cols] · wᵀ. Per output the order depends on w.cols only.
// pool may be null (single thread). Threads partition w.rows. The kernel is the
// row of the kernel table (matmul_table.h) for w's type, the row count's class and
// `isa` (Isa::kAuto: w.plan's row).
void MatMul(const WeightView& w, const float* x, int64_t m, float* y, ThreadPool* pool, Isa isa);

// Several MatMuls of the same input (q/k/v, gate/up) in one call: the
// activation is quantized once and one parallel region covers every matrix's
// rows; y_j gets [m, ws[j]->rows]. Matrices of different types or K fall back
// to one call each. Each output is computed exactly as by MatMul.
constexpr int kMaxMatMulGroup = 4;
void MatMulGroup(const WeightView* const* ws, int n, const float* x, int64_t m, float* const* ys,
                 ThreadPool* pool, Isa isa);

// The invariant mode's refined MatMul: y = (the int8 activation of x)·wᵀ + (the
// int8 activation of r)·wᵀ, r = ActResidual(x) — bit for bit MatMulGroup over
// the 2m stacked rows [x; r] (its row for 2m rows) followed by an Add of the two
// halves, but with x quantized once, r taken from that quantization, each x row
// beside its r row, and the two outputs added inside the parallel region (by
// the AVX-512 prefill kernels as they store). Float weight types: MatMulGroup.
void MatMulGroupRefined(const WeightView* const* ws, int n, const float* x, int64_t m,
                        float* const* ys, ThreadPool* pool, Isa isa);

// The block length along K over which a MatMul with weights of type t quantizes
// its activations to int8 (32, or 256 for the K-quants and iq4_xs); 0 for the
// float types, whose kernels read the activations as they are.
int ActQuantBlock(DType t);
// r[m, k] = x - the quantized activation the kernels compute from x for weights
// of type t (ActQuantBlock(t) != 0): the rounding error of the int8 activation,
// exact up to one rounding per element. Row-local: the same bits on every ISA
// and any pool (the ISA's quantizer equals the scalar one; rows split across threads).
void ActResidual(DType t, const float* x, int64_t m, int64_t k, float* r, ThreadPool* pool,
                 Isa isa);

// Canonical 8-lane dot product of two float vectors of length n.
float Dot(const float* a, const float* b, int64_t n, Isa isa);

// y[r] = x[r] * (1 / sqrt(mean(x[r]^2) + eps)) * w, for m rows of n. The sum of
// squares is the 8-lane sum; scale = 1.0f / sqrtf(sum / n + eps) (IEEE sqrt, div).
// y may alias x.
void RmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* y, Isa isa);

// out[i] = SiluF(gate[i]) * up[i]. out may alias gate or up.
void SwiGlu(const float* gate, const float* up, int64_t n, float* out, Isa isa);

// out[i] = GeluTanhF(gate[i]) * up[i] (GELU, tanh form, gating up: Gemma's FFN).
// out may alias gate or up.
void GeGlu(const float* gate, const float* up, int64_t n, float* out, Isa isa);

// out[i] = a[i] + b[i]. out may alias a or b.
void Add(const float* a, const float* b, int64_t n, float* out, Isa isa);

// s = 0; s += ExpF(x[i] - shift) for i = 0, 1, ..., n - 1: one serial sum in
// index order (the sampler's log-sum-exp). The SIMD paths compute the exps
// 8 (NEON: 4) at a time and add them into s one by one in the same order,
// leaving out only adds that provably cannot change s (internal.h,
// SumSkipBelow); AVX-512 uses the AVX2 path. Same bits on every path.
float SumExpShifted(const float* x, int64_t n, float shift, Isa isa);

// The first index of the largest x[i] (ties to the lower index, rule R7),
// exactly as the scalar loop `if (x[i] > x[best]) best = i`: NaNs never win,
// and a NaN at x[0] is never beaten (the result is 0). n >= 1 (0 for n <= 0).
// x[Argmax] is also the row's max as std::max folds it from x[0] (the first of
// equal values, so also the sign of a zero max). AVX-512 uses the AVX2 path.
int64_t Argmax(const float* x, int64_t n, Isa isa);

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
// denominator. Needs scratch[n_kv]. softcap > 0 (Gemma 2) first replaces each s_t
// by softcap * tanh(s_t / softcap); 0: no capping.
void AttendHead(const float* q, const KvRows& k, const KvRows& v, DType kv_type, int64_t n_kv,
                int head_dim, float scale, float softcap, float* out, float* scratch, Isa isa);

// AttendHead for two queries over the same K/V rows (two heads of one KV group,
// or two tokens of one sequence: n_kv0 and n_kv1 may differ). Results are
// exactly those of two AttendHead calls; the AVX-512 path shares each K/V load
// between both. Needs scratch[2 * max(n_kv0, n_kv1) + 2 * head_dim].
void AttendHeadPair(const float* q0, const float* q1, const KvRows& k, const KvRows& v,
                    DType kv_type, int64_t n_kv0, int64_t n_kv1, int head_dim, float scale,
                    float softcap, float* out0, float* out1, float* scratch, Isa isa);

// AttendHead for nq (1..kMaxAttendQueries) queries over the same K/V rows: the
// heads of one KV group for consecutive tokens of one sequence (query i sees
// positions [0, n_kv[i])). Results are exactly those of nq AttendHead calls. The
// AVX2/AVX-512 path walks K and V in blocks of positions that every query passes
// over while they are in L1, so a long context is read from memory once per
// call rather than once per query (prefill at depth). Needs
// scratch[AttendHeadsScratch(nq, max n_kv, head_dim)].
constexpr int kMaxAttendQueries = 32;
int64_t AttendHeadsScratch(int nq, int64_t n_max, int head_dim);
void AttendHeads(const float* const* qs, const int64_t* n_kv, int nq, const KvRows& k,
                 const KvRows& v, DType kv_type, int head_dim, float scale, float softcap,
                 float* const* outs, float* scratch, Isa isa);

// AttendHead's three steps as separate calls, so that one token's attention can
// spread over threads when it has fewer KV heads than there are threads
// (decode): the scores by position range, the softmax by query, the weighted
// sum of V by output-dim range. Each value is computed by the same operations
// in the same order as in AttendHead (a score depends on its position only, the
// softmax on the whole row, an output dim on that dim's column only), so the
// three together give exactly AttendHead's results for every query.
// Whether the three steps have SIMD kernels on `isa` for head_dim (else they
// run the scalar reference: same values, slower).
bool AttendStepsHaveSimd(Isa isa, int head_dim);
// Scores of queries qs[0..nq) (nq <= kMaxAttendQueries) at positions [t0, t1):
// s[i][t] = Dot8(q_i, k_t) * scale (no softcap).
void AttendScores(const float* const* qs, int nq, const KvRows& k, DType kv_type, int64_t t0,
                  int64_t t1, int head_dim, float scale, float* const* s, Isa isa);
// s[0..n) -> ExpF(s_t - max) after the softcap (0: none); returns the
// denominator (8-lane sum, lane t % 8).
float AttendSoftmax(float* s, int64_t n, float softcap, Isa isa);
// out[i][j] for j in [j0, j1) = (fma over t < n of e[i][t] * v_t[j]) / den[i];
// j0 a multiple of 16, j1 one too or head_dim.
void AttendValues(const float* const* e, const float* den, int nq, const KvRows& v, DType kv_type,
                  int64_t n, int j0, int j1, int head_dim, float* const* out, Isa isa);

}  // namespace stet::kernels
