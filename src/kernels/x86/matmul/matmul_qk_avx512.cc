// AVX-512 VNNI MatMul for q4_k weights on 256-superblock int8 activations,
// m >= 2. As in matmul_q8_avx512.cc the activations are "vertical" (ActQ8KV:
// 4 q's of 16 rows per vector), so one vpdpbusd of a broadcast 4-nibble weight
// word (unsigned) with the activations (signed) does 64 exact multiply-adds.
// The nibbles are split to bytes once per weight row and 128 activation rows
// (RowNibbles), so the inner loop is a broadcast and two vpdpbusd per word
// (split in the loop, each word cost an and, half of them a shift: 15-18%
// slower at 64-512 rows on a Zen 4), and the next weight rows are prefetched
// into L2 while these rows' tiles run.
// Per superblock and 16 rows: dot_j over each 32-element sub-block, isum =
// sum_j sc_j * dot_j (vpmulld, exact), msum = sum_j min_j * sum qx_j (vpdpwssd
// on int16 pairs, exact).
//
// Numerics: per output, superblock b's isum and msum go to logical lane b % 8
// as lane = fma(d * dx, float(isum), lane); lane = fma(-(dmin * dx),
// float(msum), lane), in increasing b, then the fixed lane tree: equal to
// ref/matmul_qk.cc bit for bit. One logical lane at a time, as in the q8_0 kernel.
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/avx512_util.h"
#include "numerics/dequant.h"

namespace stet::kernels::avx512 {

namespace {

// Per weight row and superblock: d, dmin, the 8 sub-block scales, and the
// mins as 4 int16 pairs (for vpdpwssd against the activation sums).
struct SuperAux {
  float d, dmin;
  int32_t sc[8];
  int32_t mn2[4];
};

// The 12 packed scale bytes as words (UnpackScaleMinK4's layout, all eight at
// once): bytes 0..3 low 6 bits of scales 0..3, bytes 4..7 of mins 0..3, their
// top 2 bits the high bits of scales / mins 4..7, whose low nibbles are in
// bytes 8..11.
void RowAux(const BlockQ4_K* blocks, int64_t nsb, SuperAux* aux) {
  for (int64_t b = 0; b < nsb; ++b) {
    SuperAux& a = aux[b];
    a.d = _cvtsh_ss(blocks[b].d);
    a.dmin = _cvtsh_ss(blocks[b].dmin);
    const uint8_t* q = blocks[b].scales;
    const uint32_t q0 = static_cast<uint32_t>(Load32(q)), q1 = static_cast<uint32_t>(Load32(q + 4));
    const uint32_t q2 = static_cast<uint32_t>(Load32(q + 8));
    const uint64_t sc = (q0 & 0x3f3f3f3fu) |
                        static_cast<uint64_t>((q2 & 0x0f0f0f0fu) | (((q0 >> 6) & 0x03030303u) << 4))
                            << 32;
    const uint64_t mn =
        (q1 & 0x3f3f3f3fu) |
        static_cast<uint64_t>(((q2 >> 4) & 0x0f0f0f0fu) | (((q1 >> 6) & 0x03030303u) << 4)) << 32;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.sc),
                        _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(sc))));
    // int16 pairs (mn_2p, mn_2p+1): the eight mins widened to int16.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(a.mn2),
                     _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(mn))));
  }
}

// Weight row n's superblock b, its 256 nibbles unpacked to bytes (element e of
// sub-block j at 32 j + e), once per weight row and activation group block.
void RowNibbles(const BlockQ4_K* blocks, int64_t nsb, uint8_t* out) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  for (int64_t b = 0; b < nsb; ++b) {
    for (int jp = 0; jp < 4; ++jp) {
      const __m256i q =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[b].qs + 32 * jp));
      uint8_t* o = out + b * kQKK + 64 * jp;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), _mm256_and_si256(q, low4));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 32),
                          _mm256_and_si256(_mm256_srli_epi16(q, 4), low4));
    }
  }
}

template <int RN, int TG>
void Tile(const uint8_t* const* wq, const SuperAux* aux, const ActQ8KV& act, int64_t g0, bool pairs,
          float* y, int64_t ldy) {
  const int64_t nsb = act.nsb;
  VerticalTile<TG, RN>(nsb, g0, act.m, pairs, y, ldy, [&](int64_t b, __m512(&acc)[TG][RN]) {
    __m512i isum[TG][RN];
    FillTile(isum, _mm512_setzero_si512());
    const int8_t* xs = act.qs + (g0 * nsb + b) * 4096;
    for (int j = 0; j < 8; ++j) {
      __m512i dot[TG][RN];
      FillTile(dot, _mm512_setzero_si512());
      VerticalDots<8, true>(xs + j * 512, nsb * 4096, dot, [&](int n, int s) {
        return _mm512_set1_epi32(Load32(wq[n] + b * kQKK + 32 * j + 4 * s));
      });
      AddScaledDots(isum, dot, [&](int n) { return aux[n * nsb + b].sc[j]; });
    }
    STET_UNROLL
    for (int g = 0; g < TG; ++g) {
      const int64_t gb = (g0 + g) * nsb + b;
      const __m512 dx = _mm512_loadu_ps(act.d + gb * 16);
      __m512i sx[4];
      STET_UNROLL
      for (int p = 0; p < 4; ++p) sx[p] = _mm512_loadu_si512(act.sx + (gb * 4 + p) * 32);
      STET_UNROLL
      for (int n = 0; n < RN; ++n) {
        const SuperAux& a = aux[n * nsb + b];
        __m512i msum = _mm512_setzero_si512();
        STET_UNROLL
        for (int p = 0; p < 4; ++p)
          msum = _mm512_dpwssd_epi32(msum, sx[p], _mm512_set1_epi32(a.mn2[p]));
        const __m512 sd = _mm512_mul_ps(_mm512_set1_ps(a.d), dx);
        const __m512 sm = NegMul(_mm512_set1_ps(a.dmin), dx);
        acc[g][n] = _mm512_fmadd_ps(sd, _mm512_cvtepi32_ps(isum[g][n]), acc[g][n]);
        acc[g][n] = _mm512_fmadd_ps(sm, _mm512_cvtepi32_ps(msum), acc[g][n]);
      }
    }
  });
}

constexpr int kRN = 4;
constexpr int kTG = 2;
constexpr int64_t kGroupBlock = 8;  // 128 rows x K of activations per block

thread_local std::vector<SuperAux> tls_aux;
thread_local std::vector<uint8_t> tls_nibbles;

}  // namespace

void VerticalizeQ8K(const ActQ8K& a8k, ActQ8KV* v, int64_t g0, int64_t g1) {
  const int64_t nsb = v->nsb;
  VerticalWords<64>(g0, g1, nsb, v->m, v->biased, v->qs,
                    [&](int64_t gb, int64_t b, int t, int64_t row, bool real) {
                      v->d[gb * 16 + t] = real ? a8k.d[row * nsb + b] : 0.0f;
                      const int16_t* bs = a8k.bsums + (row * nsb + b) * 16;
                      if (v->sx != nullptr) {  // sub-block j's sum: bs[2j] + bs[2j + 1]
                        int16_t* sx = v->sx + gb * 4 * 32;
                        for (int j = 0; j < 8; ++j) {
                          sx[(j / 2) * 32 + t * 2 + j % 2] =
                              real ? static_cast<int16_t>(bs[2 * j] + bs[2 * j + 1]) : int16_t{0};
                        }
                      }
                      if (v->sx16 != nullptr) {
                        int16_t* sx16 = v->sx16 + gb * 8 * 32;
                        for (int j = 0; j < 16; ++j)
                          sx16[(j / 2) * 32 + t * 2 + j % 2] = real ? bs[j] : int16_t{0};
                      }
                      return a8k.qs + row * a8k.k + b * kQKK;
                    });
}

namespace {

void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  const ActQ8KV& act = *a.a8kv;
  const size_t aux = static_cast<size_t>(kRN * act.nsb);
  if (tls_aux.size() < aux) tls_aux.resize(aux);
  if (tls_nibbles.size() < aux * kQKK) tls_nibbles.resize(aux * kQKK);
  const uint8_t* wq[kRN];
  VerticalRows<kRN, kTG, kGroupBlock>(
      *a.w, act.groups, r0, r1,
      [&](int n, const uint8_t* row) {
        avx2::PrefetchLines(row + kRN * a.w->row_bytes, a.w->row_bytes);  // the next rows
        const auto* blocks = reinterpret_cast<const BlockQ4_K*>(row);
        RowAux(blocks, act.nsb, tls_aux.data() + n * act.nsb);
        uint8_t* nib = tls_nibbles.data() + n * act.nsb * kQKK;
        RowNibbles(blocks, act.nsb, nib);
        wq[n] = nib;
      },
      [&](auto rn, auto tg, int64_t r, int64_t g) {
        Tile<decltype(rn)::value, decltype(tg)::value>(wq, tls_aux.data(), act, g, a.sum_row_pairs,
                                                       a.y + r, a.w->rows);
      });
}

constexpr auto kKernels =
    KernelRows({"avx512.vertical", Isa::kAvx512, kPrefillOnly, Packed::kNo, ActLayout::kQ8KV},
               {{DType::kQ4_K, Rows, kActSubSums}});

}  // namespace

std::span<const MatMulKernel> MatMulQKKernels() { return kKernels; }

}  // namespace stet::kernels::avx512
