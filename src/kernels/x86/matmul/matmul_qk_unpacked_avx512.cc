// AVX-512 VNNI MatMul for q2_k/q3_k/q5_k/q6_k/iq4_xs weights on 256-superblock
// int8 activations, m >= 2 (q4_k has its own nibble kernel, matmul_qk_avx512.cc).
// Each weight superblock is unpacked once per weight row and 128 activation rows
// into 256 signed integer weights w_e and per-sub-block integer scales sc (the
// weight is d * sc * w_e, minus dmin * m for q2_k/q5_k), so one kernel serves
// every layout. The activations are vertical (ActQ8KV) and biased (x + 128,
// unsigned, as vpdpbusd wants): one vpdpbusd of a broadcast 4-byte weight word
// does 64 exact multiply-adds for 16 rows, and
//   isum = sum_sub sc_sub * sum_{e in sub} w_e (x_e + 128) - 128 * sum_sub sc_sub * sum w_e
// is exact in int32 (|terms| < 2^31 for every type's ranges), as is
// msum = sum_16 m_16 * sum x over the 16 (vpdpwssd on int16 pairs).
//
// Numerics: per output, superblock b's isum (and msum) go to logical lane b % 8
// as lane = fma(d * dx, float(isum), lane) (then lane = fma(-(dmin * dx),
// float(msum), lane)), in increasing b, then the fixed lane tree: equal to
// ref/matmul_qk.cc bit for bit (matmul_test.cc).
#include <immintrin.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/avx512_util.h"
#include "numerics/dequant.h"

namespace stet::kernels::avx512 {

namespace {

// Elements per scale: 16 (q2_k, q3_k, q6_k) or 32 (q5_k, iq4_xs).
template <typename B>
constexpr int kSub = std::is_same_v<B, BlockQ5_K> || std::is_same_v<B, BlockIQ4_XS> ? 32 : 16;

// One weight superblock, unpacked.
struct Super {
  int8_t w[kQKK];
  int32_t sc[16];  // per sub-block of kSub elements
  int32_t mn2[8];  // mins per 16 elements as int16 pairs (m[2p], m[2p + 1])
  int32_t corr;    // 128 * sum_sub sc_sub * sum_{e in sub} w_e
  float d, dmin;
};

inline __m256i Ld32(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
inline void St32(int8_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
// Bits [n, n + width) of every byte (width = log2(mask + 1)).
inline __m256i Bits(__m256i v, int n, int mask) {
  return _mm256_and_si256(_mm256_srli_epi16(v, n), _mm256_set1_epi8(static_cast<char>(mask)));
}

// q2_k and q3_k share the 2-bit planes: element 128h + 32g + l is bits 2g.. of
// qs[32h + l]; q3_k's high bit is bit 4h + g of hmask[l] (q = low - 4 when clear).
void Unpack(const BlockQ2_K& b, Super* s, int32_t m16[16]) {
  for (int h = 0; h < 2; ++h) {
    const __m256i qs = Ld32(b.qs + 32 * h);
    for (int g = 0; g < 4; ++g) St32(s->w + 128 * h + 32 * g, Bits(qs, 2 * g, 3));
  }
  for (int j = 0; j < 16; ++j) {
    s->sc[j] = b.scales[j] & 0x0f;
    m16[j] = b.scales[j] >> 4;
  }
  s->d = _cvtsh_ss(b.d);
  s->dmin = _cvtsh_ss(b.dmin);
}

void Unpack(const BlockQ3_K& b, Super* s, int32_t*) {
  const __m256i hm = Ld32(b.hmask), four = _mm256_set1_epi8(4);
  for (int h = 0; h < 2; ++h) {
    const __m256i qs = Ld32(b.qs + 32 * h);
    for (int g = 0; g < 4; ++g) {
      const __m256i high4 = _mm256_slli_epi16(Bits(hm, 4 * h + g, 1), 2);
      St32(s->w + 128 * h + 32 * g,
           _mm256_sub_epi8(_mm256_or_si256(Bits(qs, 2 * g, 3), high4), four));
    }
  }
  for (int j = 0; j < 16; ++j) s->sc[j] = Q3KScale(b.scales, j);
  s->d = _cvtsh_ss(b.d);
}

// Sub-block j (32 elements): nibble j % 2 of qs[32 (j / 2) + l], bit j of qh[l] on top.
void Unpack(const BlockQ5_K& b, Super* s, int32_t m16[16]) {
  const __m256i qh = Ld32(b.qh);
  for (int jp = 0; jp < 4; ++jp) {
    const __m256i qs = Ld32(b.qs + 32 * jp);
    for (int half = 0; half < 2; ++half) {
      const int j = 2 * jp + half;
      const __m256i high = _mm256_slli_epi16(Bits(qh, j, 1), 4);
      St32(s->w + 32 * j, _mm256_or_si256(Bits(qs, 4 * half, 15), high));
    }
  }
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    UnpackScaleMinK4(b.scales, j, &sc, &mn);
    s->sc[j] = sc;
    m16[2 * j] = m16[2 * j + 1] = mn;
  }
  s->d = _cvtsh_ss(b.d);
  s->dmin = _cvtsh_ss(b.dmin);
}

// Element 128h + 32g + l: nibble g / 2 of ql[64h + 32 (g % 2) + l], bits 2g.. of
// qh[32h + l] on top, minus 32.
void Unpack(const BlockQ6_K& b, Super* s, int32_t*) {
  const __m256i m32 = _mm256_set1_epi8(32);
  for (int h = 0; h < 2; ++h) {
    const __m256i qh = Ld32(b.qh + 32 * h);
    for (int g = 0; g < 4; ++g) {
      const __m256i ql = Ld32(b.ql + 64 * h + 32 * (g % 2));
      const __m256i q =
          _mm256_or_si256(Bits(ql, 4 * (g / 2), 15), _mm256_slli_epi16(Bits(qh, 2 * g, 3), 4));
      St32(s->w + 128 * h + 32 * g, _mm256_sub_epi8(q, m32));
    }
  }
  for (int j = 0; j < 16; ++j) s->sc[j] = b.scales[j];
  s->d = _cvtsh_ss(b.d);
}

void Unpack(const BlockIQ4_XS& b, Super* s, int32_t*) {
  const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues));
  const __m128i low4 = _mm_set1_epi8(0x0f);
  for (int j = 0; j < 8; ++j) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * j));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(s->w + 32 * j),
                     _mm_shuffle_epi8(levels, _mm_and_si128(q, low4)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(s->w + 32 * j + 16),
                     _mm_shuffle_epi8(levels, _mm_and_si128(_mm_srli_epi16(q, 4), low4)));
    s->sc[j] = IQ4XSScale(b, j);
  }
  s->d = _cvtsh_ss(b.d);
}

// The sums of each 16 of the 256 signed weights, exact: sad of w + 128 per 8 bytes.
inline void Sums16(const int8_t* w, int32_t out[16]) {
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
  alignas(32) int64_t s8[32];
  for (int i = 0; i < 8; ++i) {
    const __m256i v =
        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 32 * i)), bias);
    _mm256_store_si256(reinterpret_cast<__m256i*>(s8 + 4 * i),
                       _mm256_sad_epu8(v, _mm256_setzero_si256()));
  }
  for (int j = 0; j < 16; ++j) out[j] = static_cast<int32_t>(s8[2 * j] + s8[2 * j + 1]) - 16 * 128;
}

template <typename Block>
void RowAux(const Block* blocks, int64_t nsb, Super* out) {
  constexpr int kS = kSub<Block>;
  for (int64_t b = 0; b < nsb; ++b) {
    Super& s = out[b];
    int32_t m16[16] = {};
    Unpack(blocks[b], &s, m16);
    int32_t sum16[16];
    Sums16(s.w, sum16);
    int32_t corr = 0;
    for (int j = 0; j < 16; ++j) corr += s.sc[j / (kS / 16)] * sum16[j];
    s.corr = 128 * corr;
    for (int p = 0; p < 8; ++p) s.mn2[p] = Int16Pair(m16[2 * p], m16[2 * p + 1]);
  }
}

// Outputs for RN weight rows (us[n]: their nsb superblocks) and TG row groups g0..
template <typename Block, int RN, int TG>
void Tile(const Super* const* us, const ActQ8KV& act, int64_t g0, bool pairs, float* y,
          int64_t ldy) {
  constexpr int kSteps = kSub<Block> / 4;  // 4-element steps per sub-block
  const int64_t nsb = act.nsb;
  VerticalTile<TG, RN>(nsb, g0, act.m, pairs, y, ldy, [&](int64_t b, __m512(&acc)[TG][RN]) {
    __m512i isum[TG][RN];
    STET_UNROLL
    for (int g = 0; g < TG; ++g) STET_UNROLL
    for (int n = 0; n < RN; ++n) isum[g][n] = _mm512_set1_epi32(-us[n][b].corr);
    const uint8_t* xs = reinterpret_cast<const uint8_t*>(act.qs) + (g0 * nsb + b) * 4096;
    for (int sub = 0; sub < kQKK / kSub<Block>; ++sub) {
      __m512i dot[TG][RN];
      FillTile(dot, _mm512_setzero_si512());
      VerticalDots<kSteps, false>(xs + sub * kSteps * 64, nsb * 4096, dot, [&](int n, int s) {
        return _mm512_set1_epi32(Load32(us[n][b].w + 4 * (sub * kSteps + s)));
      });
      AddScaledDots(isum, dot, [&](int n) { return us[n][b].sc[sub]; });
    }
    STET_UNROLL
    for (int g = 0; g < TG; ++g) {
      const int64_t gb = (g0 + g) * nsb + b;
      const __m512 dx = _mm512_loadu_ps(act.d + gb * 16);
      STET_UNROLL
      for (int n = 0; n < RN; ++n) {
        const Super& s = us[n][b];
        acc[g][n] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(s.d), dx),
                                    _mm512_cvtepi32_ps(isum[g][n]), acc[g][n]);
        if constexpr (kSuperHasMins<Block>) {
          __m512i msum = _mm512_setzero_si512();
          STET_UNROLL
          for (int p = 0; p < 8; ++p) {
            msum = _mm512_dpwssd_epi32(msum, _mm512_loadu_si512(act.sx16 + (gb * 8 + p) * 32),
                                       _mm512_set1_epi32(s.mn2[p]));
          }
          acc[g][n] = _mm512_fmadd_ps(NegMul(_mm512_set1_ps(s.dmin), dx), _mm512_cvtepi32_ps(msum),
                                      acc[g][n]);
        }
      }
    }
  });
}

constexpr int kRN = 4;
constexpr int kTG = 2;
constexpr int64_t kGroupBlock = 8;  // 128 activation rows per unpack of a weight row

thread_local std::vector<Super> tls_super;

template <typename Block>
void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  const ActQ8KV& act = *a.a8kv;
  STET_CHECK_MSG(act.biased && (!kSuperHasMins<Block> || act.sx16 != nullptr),
                 "avx512::MatMulQKUnpackedRows: activations not laid out for this type");
  const size_t n_aux = static_cast<size_t>(kRN * act.nsb);
  if (tls_super.size() < n_aux) tls_super.resize(n_aux);
  const Super* us[kRN];
  VerticalRows<kRN, kTG, kGroupBlock>(
      *a.w, act.groups, r0, r1,
      [&](int n, const uint8_t* row) {
        avx2::PrefetchLines(row + kRN * a.w->row_bytes, a.w->row_bytes);  // the next rows
        Super* dst = tls_super.data() + n * act.nsb;
        RowAux(reinterpret_cast<const Block*>(row), act.nsb, dst);
        us[n] = dst;
      },
      [&](auto rn, auto tg, int64_t r, int64_t g) {
        Tile<Block, decltype(rn)::value, decltype(tg)::value>(us, act, g, a.sum_row_pairs, a.y + r,
                                                              a.w->rows);
      });
}

constexpr auto kKernels = KernelRowsOf<BlockQ2_K, BlockQ3_K, BlockQ5_K, BlockQ6_K, BlockIQ4_XS>(
    {"avx512.vertical", Isa::kAvx512, kPrefillOnly, Packed::kNo, ActLayout::kQ8KV}, [](auto b) {
      using B = typename decltype(b)::type;
      return TypeRows{B::kType, Rows<B>,
                      static_cast<uint8_t>(kActBiased | (kSuperHasMins<B> ? kActSums16 : 0))};
    });

}  // namespace

std::span<const MatMulKernel> MatMulQKUnpackedKernels() { return kKernels; }

}  // namespace stet::kernels::avx512
