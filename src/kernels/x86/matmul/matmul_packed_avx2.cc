// AVX2 MatMul for q8_0/q4_0/q4_1/q5_0/q5_1 weights in the packed 16-row layout
// (kernels/pack.cc), for decode and prefill alike. The group is walked as two
// 8-row halves: a 32-byte load brings 4 quants of 8 rows, and one maddubs with
// a broadcast 4-byte activation word does 32 exact multiply-adds, so a block's
// int32 dots for 8 rows land in one vector — no horizontal sums, no per-row
// scale gathers (the 8 rows' scales are adjacent f16s). Each weight load (and
// its unpacking) serves RM activation rows at once; batches of 16+ rows unpack
// each half once for 64 rows (UnpackedHalves, below).
//  * q4_0/q4_1: nibbles (0..15) are maddubs' unsigned operand; the 8 int16
//    partials of a block are added in int16 (|sum| <= 8 * 2 * 15 * 127 = 30480,
//    exact), then widened by madd; q4_0 subtracts 8 * sum qx (exact).
//  * q8_0 (stored q + 128): un-biased, then |w| * (x * sign w) as the unpacked
//    kernel does (pairs <= 2 * 128 * 127, exact), widened per word.
// Numerics: per output, block b's exact isum goes to logical lane b % 8 as
// lane = fma(dw * dx, float(isum), lane) (q4_1 then lane = fma(mw, s, lane)), in
// increasing b, then the fixed lane tree: equal to ref/matmul_q8.cc bit for bit
// for any RM (matmul_test.cc: Avx2PackedEqualsScalar).
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/matmul/packed_rows_avx2.h"

namespace stet::kernels::avx2 {

namespace {

template <typename Block>
constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>;
template <typename Block>
constexpr int kQBytesOf = std::is_same_v<Block, BlockQ8_0> ? 512 : 256;

// q5_0/q5_1: the fifth bits of word j's 8 rows of one half as 0x10 per byte,
// for the low (elements 4j..4j+3) and high (16+4j..) nibbles (pack.cc: a byte
// per row and word after the scales, bits 0-3 and 4-7).
inline void FifthBits(const uint8_t* hb, __m256i* lo, __m256i* hi) {
  // Byte 4u + e of each 128-bit lane <- row byte u (lane 1: rows 4..7).
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4,
                                          4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
  const __m256i bit_lo = _mm256_set1_epi32(0x08040201);
  const __m256i bit_hi = _mm256_set1_epi32(static_cast<int32_t>(0x80402010u));
  const __m256i five = _mm256_set1_epi8(0x10);
  int64_t bits8;
  std::memcpy(&bits8, hb, 8);
  const __m256i rep = _mm256_shuffle_epi8(_mm256_set1_epi64x(bits8), spread);
  *lo = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(rep, bit_lo), bit_lo), five);
  *hi = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(rep, bit_hi), bit_hi), five);
}

// The words of one block of a packed group (at p), unpacked as they are read: NH
// = 2 reads both 8-row halves (h = 0 at byte 0 of each 64-byte word, h = 1 at 32:
// constants the compiler folds), NH = 1 the one at half0 (0 or 32).
template <typename Block, int NH>
struct PackedWords {
  const uint8_t* p;
  int half0;
  int Half(int h) const { return NH == 2 ? 32 * h : half0; }
  // q4/q5: word j of half h as maddubs' unsigned operand — its low nibbles
  // (elements 4j..4j+3 of the 8 rows) and high (16+4j..), q5's fifth bits in.
  void Quants(int j, int h, __m256i* lo, __m256i* hi) const {
    const __m256i mask = _mm256_set1_epi8(0x0f);
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * j + Half(h)));
    *lo = _mm256_and_si256(raw, mask);
    *hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask);
    if constexpr (kQ5<Block>) {
      __m256i f_lo, f_hi;
      FifthBits(p + kQBytesOf<Block> + (kBlockHasMin<Block> ? 64 : 32) + 16 * j + Half(h) / 4,
                &f_lo, &f_hi);
      *lo = _mm256_or_si256(*lo, f_lo);
      *hi = _mm256_or_si256(*hi, f_hi);
    }
  }
  // Half h's 8 f16 scales (and its 8 mins 32 bytes on).
  const uint8_t* Scales(int h) const { return p + kQBytesOf<Block> + Half(h) / 2; }
};

// One block of a half unpacked ahead (Unpacker::Unpack): its 4 words' low then high
// quants (32 bytes each), then the half's scales as PackedWords::Scales has them.
constexpr int64_t kUnpackedQBytes = 256;
template <typename Block>
constexpr int64_t kUnpackedBlockBytes = kUnpackedQBytes + (kBlockHasMin<Block> ? 64 : 32);

struct UnpackedWords {
  const uint8_t* u;
  void Quants(int j, int /*h*/, __m256i* lo, __m256i* hi) const {
    *lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + 64 * j));
    *hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + 64 * j + 32));
  }
  const uint8_t* Scales(int /*h*/) const { return u + kUnpackedQBytes; }
};

// Exact int32 dots of one 32-block (words from w) for the 8 rows of NH halves
// and RM activation rows, whose block quants start at xq[i]: is[h * RM + i].
// Each activation word is broadcast once for all halves; q4_0's -8 * sum qx
// is left to the caller.
template <typename Block, int NH, int RM, typename Words>
inline void BlockDots(const Words& w, const int8_t* const* xq, __m256i* is) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (std::is_same_v<Block, BlockQ8_0>) {
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
    STET_UNROLL
    for (int k = 0; k < NH * RM; ++k) is[k] = _mm256_setzero_si256();
    STET_UNROLL
    for (int j = 0; j < 8; ++j) {
      __m256i x[RM];
      STET_UNROLL
      for (int i = 0; i < RM; ++i) x[i] = Bcast32(xq[i] + 4 * j);
      STET_UNROLL
      for (int h = 0; h < NH; ++h) {
        const __m256i q = _mm256_xor_si256(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.p + 64 * j + w.Half(h))), bias);
        const __m256i aq = _mm256_sign_epi8(q, q);
        STET_UNROLL
        for (int i = 0; i < RM; ++i) {
          const __m256i p16 = _mm256_maddubs_epi16(aq, _mm256_sign_epi8(x[i], q));
          is[h * RM + i] = _mm256_add_epi32(is[h * RM + i], _mm256_madd_epi16(p16, ones));
          KeepInRegister(is[h * RM + i]);
        }
      }
    }
  } else {
    // q4_0/q4_1 nibbles (0..15) or q5's with their fifth bits (0..31), maddubs'
    // unsigned operand. int16 partials are widened every kWiden words: 4 words of
    // q4 (<= 8 * 2 * 15 * 127 = 30480) or 2 of q5 (<= 4 * 2 * 31 * 127 = 31496), exact.
    constexpr int kWiden = kQ5<Block> ? 2 : 4;
    __m256i s16[NH * RM];
    STET_UNROLL
    for (int k = 0; k < NH * RM; ++k) {
      is[k] = _mm256_setzero_si256();
      s16[k] = _mm256_setzero_si256();
    }
    STET_UNROLL
    for (int j = 0; j < 4; ++j) {
      // Low nibbles: elements 4j..4j+3; high nibbles: 16+4j..16+4j+3.
      __m256i xl[RM], xh[RM];
      STET_UNROLL
      for (int i = 0; i < RM; ++i) {
        xl[i] = Bcast32(xq[i] + 4 * j);
        xh[i] = Bcast32(xq[i] + 16 + 4 * j);
      }
      STET_UNROLL
      for (int h = 0; h < NH; ++h) {
        __m256i lo, hi;
        w.Quants(j, h, &lo, &hi);
        STET_UNROLL
        for (int i = 0; i < RM; ++i) {
          __m256i& acc = s16[h * RM + i];
          acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(lo, xl[i]));
          acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(hi, xh[i]));
          KeepInRegister(acc);
        }
      }
      if ((j + 1) % kWiden == 0) {
        STET_UNROLL
        for (int k = 0; k < NH * RM; ++k) {
          is[k] = _mm256_add_epi32(is[k], _mm256_madd_epi16(s16[k], ones));
          s16[k] = _mm256_setzero_si256();
        }
      }
    }
  }
}

// Block b's exact dots `is` of NH halves (words from w) into logical lane
// accumulators acc[h * RM + i] (one per half and activation row; each holds that
// lane for the half's 8 outputs).
template <typename Block, int NH, int RM, typename Words>
inline void AddBlock(const Words& w, const ActQ8& act, const int64_t* blk, const __m256i* is,
                     __m256* const* acc) {
  STET_UNROLL
  for (int h = 0; h < NH; ++h) {
    const __m256 dw =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.Scales(h))));
    __m256 mw = _mm256_setzero_ps();
    if constexpr (kBlockHasMin<Block>) {
      mw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.Scales(h) + 32)));
    }
    STET_UNROLL
    for (int i = 0; i < RM; ++i) {
      __m256i v = is[h * RM + i];
      if constexpr (std::is_same_v<Block, BlockQ4_0>) {
        v = _mm256_sub_epi32(v, _mm256_set1_epi32(8 * act.qsum[blk[i]]));
      }
      if constexpr (std::is_same_v<Block, BlockQ5_0>) {
        v = _mm256_sub_epi32(v, _mm256_set1_epi32(16 * act.qsum[blk[i]]));
      }
      const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(act.d[blk[i]]));
      __m256 a = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(v), *acc[h * RM + i]);
      if constexpr (kBlockHasMin<Block>) {
        a = _mm256_fmadd_ps(mw, _mm256_set1_ps(act.s[blk[i]]), a);
      }
      *acc[h * RM + i] = a;
    }
  }
}

// Blocks ahead of the one computed that the first pass prefetches (4.5-8.5 KB:
// measured on Zen 3, DRAM-cold decode 0.8-0.9x the time of no prefetch).
constexpr int64_t kPrefetchBlocks = 16;

// A packed group's blocks (at p, `stride` bytes each) as HalfTile reads them.
template <typename Block, int NH>
struct PackedBlocks {
  const uint8_t* p;
  int64_t stride;
  int half0;
  PackedWords<Block, NH> At(int64_t b) const { return {p + b * stride, half0}; }
  // The first pass over the group (first half, first activation rows) streams it
  // from memory; later passes find it cached.
  __attribute__((always_inline)) void Prefetch(int64_t b, int64_t i0) const {
    if ((NH == 2 || half0 == 0) && i0 == 0) {
      PrefetchLines(p + (b + kPrefetchBlocks) * stride, stride);
    }
  }
};

// A half's blocks unpacked ahead (Unpacker::Unpack), at u.
template <typename Block>
struct UnpackedBlocks {
  const uint8_t* u;
  UnpackedWords At(int64_t b) const { return {u + b * kUnpackedBlockBytes<Block>}; }
  void Prefetch(int64_t /*b*/, int64_t /*i0*/) const {}
};

// The outputs of NH halves (blocks from `blocks`: NH = 2 reads both halves of a
// group, 16 rows) for activation rows i0..i0+RM-1; n_out counts from the first
// output row.
template <typename Block, int NH, int RM, typename Blocks>
void HalfTile(const Blocks blocks, const ActQ8& act, int64_t i0, float* y, int64_t ldy,
              int64_t n_out) {
  __m256 acc[NH * RM][kLanes];
  ZeroTile<NH, RM>(acc);
  int64_t blk[RM];
  const int8_t* xq[RM];
  __m256* lane[NH * RM];
  // One block per iteration (lane b % 8 indexed at run time, so the accumulators
  // live in L1): unrolling 8 blocks x RM rows makes GCC spill everything.
  for (int64_t b = 0; b < act.nb; ++b) {
    blocks.Prefetch(b, i0);
    STET_UNROLL
    for (int i = 0; i < RM; ++i) {
      blk[i] = (i0 + i) * act.nb_pad + b;
      xq[i] = act.qs + blk[i] * kQK;
    }
    STET_UNROLL
    for (int k = 0; k < NH * RM; ++k) lane[k] = &acc[k][b % kLanes];
    const auto words = blocks.At(b);
    __m256i is[NH * RM];
    BlockDots<Block, NH, RM>(words, xq, is);
    AddBlock<Block, NH, RM>(words, act, blk, is, lane);
  }
  StoreTile<NH, RM>(acc, y, ldy, n_out);
}

// Activation rows sharing each weight load (prefill); decode is RM = 1.
constexpr int kRM = 4;

template <typename Block>
struct Tiles {
  const ActQ8& act;
  int64_t stride;
  template <int NH, int RM>
  void Tile(const uint8_t* p, int half0, int64_t i0, float* y, int64_t ldy, int64_t n_out) const {
    const PackedBlocks<Block, NH> blocks{p, stride, half0};
    HalfTile<Block, NH, RM>(blocks, act, i0, y, ldy, n_out);
  }
};

// q4/q5 batches (packed_rows_avx2.h, UnpackedHalves): the nibbles (and q5's
// FifthBits, about ten ops a word) unpacked once per half and 64 activation rows
// rather than per tile of 4. One thread, 64-512 rows, AVX-512 Zen 4 on its AVX2
// path: q5_0/q5_1 66 -> 88-100 GMAC/s, q4_0/q4_1 1.04-1.21x. q8_0 has nothing to
// unpack (its sign steps are per activation row). The dots, their order and
// every float op are BlockDots' and AddBlock's: the same bits.
template <typename Block>
struct UnpackedTiles {
  const ActQ8& act;
  const uint8_t* u;  // the half's unpacked blocks
  template <int NH, int RM>
  void Tile(const uint8_t* /*p*/, int /*half0*/, int64_t i0, float* y, int64_t ldy,
            int64_t n_out) const {
    static_assert(NH == 1);
    HalfTile<Block, 1, RM>(UnpackedBlocks<Block>{u}, act, i0, y, ldy, n_out);
  }
};

template <typename Block>
struct Unpacker {
  static constexpr int64_t kBlockBytes = kUnpackedBlockBytes<Block>;
  const ActQ8& act;
  int64_t stride;
  UnpackedTiles<Block> Tiles(const uint8_t* u) const { return {act, u}; }
  void Unpack(const uint8_t* p, int half, uint8_t* out) const {
    for (int64_t b = 0; b < act.nb; ++b, p += stride, out += kBlockBytes) {
      const PackedWords<Block, 1> w{p, half};
      STET_UNROLL
      for (int j = 0; j < 4; ++j) {
        __m256i lo, hi;
        w.Quants(j, 0, &lo, &hi);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 64 * j), lo);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 64 * j + 32), hi);
      }
      std::memcpy(out + kUnpackedQBytes, w.Scales(0), 16);
      if constexpr (kBlockHasMin<Block>) {
        std::memcpy(out + kUnpackedQBytes + 32, w.Scales(0) + 32, 16);
      }
    }
  }
};

template <typename Block>
void Rows(const MatMulArgs& a, int64_t r0, int64_t r1) {
  const int64_t stride = PackedBlockBytes(a.w->type);
  if constexpr (!std::is_same_v<Block, BlockQ8_0>) {
    if (a.m >= kUnpackMinRows) {
      return UnpackedHalves<kRM>(Unpacker<Block>{*a.a8, stride}, a, a.a8->nb, r0, r1);
    }
  }
  PackedRows<kRM>(Tiles<Block>{*a.a8, stride}, a, a.a8->nb, r0, r1);
}

constexpr auto kKernels = KernelRowsOf<BlockQ8_0, BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1>(
    {"avx2.packed", Isa::kAvx2, kEveryClass, Packed::kNeeds, ActLayout::kQ8}, STET_ROWS_OF(Rows));

}  // namespace

std::span<const MatMulKernel> MatMulPackedKernels() { return kKernels; }

}  // namespace stet::kernels::avx2
