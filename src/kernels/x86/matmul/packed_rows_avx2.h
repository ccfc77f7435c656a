// The walk of the AVX2 packed kernels (matmul_packed_avx2.cc, matmul_packed_qk_avx2.cc)
// over a range of weight rows, shared: decode (m = 1, and m = 2: the default mode's x
// and its residual) reads both 8-row halves of a 16-row group in one pass, so each
// line is read once and each activation broadcast feeds both halves (m = 2 that way:
// 15% faster 1B/Gemma 3 decode on the AVX2 path, Zen 4); batches take one half at a
// time with RM activation rows per weight load, the last rows in smaller tiles.
// Which rows a tile holds never reaches a value (each output's order is its own).
// Only include from files compiled with the AVX2 flags.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/check.h"
#include "kernels/internal.h"
#include "kernels/x86/avx2_util.h"

namespace stet::kernels::avx2 {

// A tile's accumulators: acc[h * RM + i] holds the 8 logical lanes (each an 8-row
// vector) of half h for activation row i. Both packed kernels start them at zero and end
// them the same way: each half's lanes through the fixed tree into its 8 outputs per row
// (row i at y + i * ldy), only the first n_out rows (counted from the tile's first).
template <int NH, int RM>
inline void ZeroTile(__m256 (*acc)[kLanes]) {
  STET_UNROLL
  for (int k = 0; k < NH * RM; ++k) STET_UNROLL
  for (int l = 0; l < kLanes; ++l) acc[k][l] = _mm256_setzero_ps();
}

template <int NH, int RM>
inline void StoreTile(const __m256 (*acc)[kLanes], float* y, int64_t ldy, int64_t n_out) {
  STET_UNROLL
  for (int h = 0; h < NH; ++h) {
    if (n_out <= 8 * h) break;
    STET_UNROLL
    for (int i = 0; i < RM; ++i) {
      StoreHalf(CombineLanes8x8(acc[h * RM + i]), y + i * ldy + 8 * h, n_out - 8 * h);
    }
  }
}

// Activation rows the packed batch walk takes at a time: every 8-row half of the
// range passes over one chunk before the next, so the chunk's int8 quants (about
// k bytes a row) stay in L2 — 512 KiB of them, at least 64 rows. Before, each
// half re-read the whole batch: a 1024-row batch at k = 8192 is 8 MiB (Llama 3.2
// 1B Q4_K_M pp512 --isa avx2 +6-22% in three interleaved A/Bs, AVX-512 Zen 4).
inline int64_t BatchChunkRows(int64_t k) {
  constexpr int64_t kChunkBytes = int64_t{512} << 10;
  return std::max<int64_t>(64, kChunkBytes / std::max<int64_t>(k, 1) / 4 * 4);
}

// T::Tile<NH, RM>(p, half0, i0, y, ldy, n_out): the outputs of NH halves of the
// group at p (NH = 1: the half at byte offset half0 of each 64-byte word; NH = 2:
// both) for activation rows i0 .. i0 + RM - 1; n_out counts from the first row.
template <typename T, int RM>
void HalfTiles(const T& t, const uint8_t* p, int half, int64_t i0, int64_t m, float* y, int64_t ldy,
               int64_t n_out) {
  if constexpr (RM > 1) {
    if (m < RM) return HalfTiles<T, RM - 1>(t, p, half, i0, m, y, ldy, n_out);
  }
  int64_t i = 0;
  for (; i + RM <= m; i += RM) t.template Tile<1, RM>(p, half, i0 + i, y + i * ldy, ldy, n_out);
  if constexpr (RM > 1) {
    if (i < m) HalfTiles<T, RM - 1>(t, p, half, i0 + i, m - i, y + i * ldy, ldy, n_out);
  }
}

// The batch walk of both packed walks below: the activation rows in chunks of
// `chunk`, every 8-row half of weight rows [r0, r1) (r0 a multiple of 16) over one
// chunk before the next: f(group, half, i0, m, y, n_out) for the half at byte
// offset `half` (0 or 32) of the group at `group`, activation rows i0..i0+m-1, y
// their first output (row i0, the half's first row), n_out counted from it.
template <typename F>
void ForEachChunkHalf(const MatMulArgs& a, int64_t blocks, int64_t r0, int64_t r1, int64_t chunk,
                      F&& f) {
  const int64_t group_bytes = blocks * PackedBlockBytes(a.w->type);
  const auto* packed = static_cast<const uint8_t*>(a.w->packed);
  STET_CHECK(r0 % 16 == 0);
  for (int64_t i0 = 0; i0 < a.m; i0 += chunk) {
    const int64_t m = std::min(chunk, a.m - i0);
    for (int64_t row0 = r0; row0 < r1; row0 += 8) {
      const int half = static_cast<int>(row0 % 16) * 4;  // 0 or 32 bytes into each word
      f(packed + (row0 / 16) * group_bytes, half, i0, m, a.y + i0 * a.w->rows + row0, r1 - row0);
    }
  }
}

// Weight rows [r0, r1) (r0 a multiple of 16) of a packed matrix with `blocks`
// blocks per group, every activation row of a.
template <int kRM, typename T>
void PackedRows(const T& t, const MatMulArgs& a, int64_t blocks, int64_t r0, int64_t r1) {
  const WeightView& w = *a.w;
  // m = 1 or 2: whole groups, both halves per pass.
  auto whole_groups = [&]<int RM>() {
    const int64_t group_bytes = blocks * PackedBlockBytes(w.type);
    const auto* packed = static_cast<const uint8_t*>(w.packed);
    STET_CHECK(r0 % 16 == 0);
    for (int64_t row0 = r0; row0 < r1; row0 += 16) {
      t.template Tile<2, RM>(packed + (row0 / 16) * group_bytes, 0, 0, a.y + row0, w.rows,
                             r1 - row0);
    }
  };
  if (a.m == 1) return whole_groups.template operator()<1>();
  if (a.m == 2) return whole_groups.template operator()<2>();
  ForEachChunkHalf(a, blocks, r0, r1, BatchChunkRows(w.cols),
                   [&](const uint8_t* p, int half, int64_t i0, int64_t m, float* y, int64_t n_out) {
                     HalfTiles<T, kRM>(t, p, half, i0, m, y, w.rows, n_out);
                   });
}

// Batches of kUnpackMinRows+ activation rows may take UnpackedHalves instead: each
// 8-row half is unpacked once per kUnpackChunkRows activation rows into a
// per-thread scratch, and every tile of activation rows reads that with plain
// loads (the unpacking ran once per tile of RM rows before). Unpacking again is
// cheap, so the chunk is small enough for L1 at Gemma 3's k = 640: 32 rows
// measured 0.9x of 64 at 8192 weight rows (q5_0, AVX-512 Zen 4 on its AVX2
// path), 128 the same as 64; BatchChunkRows' 816 rows at k = 640 lost ~10%.
constexpr int64_t kUnpackMinRows = 16;
constexpr int64_t kUnpackChunkRows = 64;

// The calling thread's scratch of at least `bytes` (grown, never shrunk).
inline uint8_t* UnpackScratch(int64_t bytes) {
  thread_local std::vector<uint8_t> scratch;
  if (scratch.size() < static_cast<size_t>(bytes)) scratch.resize(static_cast<size_t>(bytes));
  return scratch.data();
}

// PackedRows for a batch through unpacked halves. U::Unpack(group, half, out)
// writes the half (byte offset 0 or 32 in each word) of a group's `blocks` blocks,
// U::kBlockBytes each; U::Tiles(out) is the tiles object (T::Tile<1, RM>, as above)
// reading them.
template <int kRM, typename U>
void UnpackedHalves(const U& un, const MatMulArgs& a, int64_t blocks, int64_t r0, int64_t r1) {
  uint8_t* scratch = UnpackScratch(blocks * U::kBlockBytes);
  const auto tiles = un.Tiles(scratch);
  ForEachChunkHalf(a, blocks, r0, r1, kUnpackChunkRows,
                   [&](const uint8_t* p, int half, int64_t i0, int64_t m, float* y, int64_t n_out) {
                     un.Unpack(p, half, scratch);
                     HalfTiles<decltype(tiles), kRM>(tiles, p, half, i0, m, y, a.w->rows, n_out);
                   });
}

}  // namespace stet::kernels::avx2
