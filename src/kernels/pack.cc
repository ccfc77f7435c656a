// PackWeights: the row-interleaved layout of q8_0/q4_0/q4_1/q5_0/q5_1/q4_k/q6_k and
// f16/bf16 matrices (see kernels.h), one row of kLayouts per type. Pure byte moves
// (q6_k: bit moves), so any CPU can build it; the kernel table's rows with
// Packed::kNeeds/kUses read it (x86/matmul_packed*.cc, x86/matmul_float_avx2.cc).
#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "kernels/internal.h"
#include "numerics/dequant.h"

namespace stet::kernels {

namespace {

// Calls body(block, p, t) for every block of every row of w, where p is the
// block's (16-row group, block) slot of the packed layout and t the row within
// the group; the slots start zeroed (rows past the matrix's end stay zero).
template <typename Block, typename Body>
void ForEachBlock(const WeightView& w, uint8_t* dst, int64_t block_elems, Body&& body) {
  const int64_t nb = w.cols / block_elems, groups = (w.rows + 15) / 16;
  const int64_t stride = PackedBlockBytes(w.type);
  std::memset(dst, 0, static_cast<size_t>(groups * nb * stride));
  for (int64_t r = 0; r < w.rows; ++r) {
    const auto* row =
        reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w.data) + r * w.row_bytes);
    for (int64_t b = 0; b < nb; ++b) body(row[b], dst + ((r / 16) * nb + b) * stride, r % 16);
  }
}

template <typename Block>
void Pack(const WeightView& w, uint8_t* dst) {
  constexpr bool kQ8 = std::is_same_v<Block, BlockQ8_0>;
  constexpr bool kQ41 = kBlockHasMin<Block>;
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>;
  constexpr int kQBytes = kQ8 ? 512 : 256;
  ForEachBlock<Block>(w, dst, kQK, [](const Block& blk, uint8_t* p, int64_t t) {
    constexpr int kWords = kQ8 ? 8 : 4;
    for (int j = 0; j < kWords; ++j) {
      uint8_t word[4];
      std::memcpy(word, reinterpret_cast<const uint8_t*>(blk.qs) + 4 * j, 4);
      if constexpr (kQ8) {
        for (uint8_t& c : word) c ^= 0x80;  // q + 128
      }
      std::memcpy(p + j * 64 + t * 4, word, 4);
    }
    std::memcpy(p + kQBytes + t * 2, &blk.d, 2);
    if constexpr (kQ41) std::memcpy(p + kQBytes + 32 + t * 2, &blk.m, 2);
    if constexpr (kQ5) {
      // Word j's fifth bits: elements 4j..4j+3 (low nibble) and 16+4j.. (high).
      uint32_t qh;
      std::memcpy(&qh, blk.qh, 4);
      uint8_t* hb = p + kQBytes + (kQ41 ? 64 : 32);
      for (int j = 0; j < 4; ++j) {
        hb[j * 16 + t] =
            static_cast<uint8_t>(((qh >> (4 * j)) & 0xfu) | (((qh >> (16 + 4 * j)) & 0xfu) << 4));
      }
    }
  });
}

// q4_k: per 16-row group and superblock, the 32 quant words (4 bytes = 8
// nibbles of each row: word w holds elements 64(w/8) + 4(w%8).. in its low
// nibbles and 32 more in its high ones), then the 8 sub-block scales as bytes
// [j][row], the mins as bytes [j/2][row][j%2], d and dmin as f16 [row]:
// 2368 bytes for 16 rows, 3% more than the 16 blocks it copies.
void PackQ4K(const WeightView& w, uint8_t* dst) {
  ForEachBlock<BlockQ4_K>(w, dst, kQKK, [](const BlockQ4_K& blk, uint8_t* p, int64_t t) {
    for (int word = 0; word < 32; ++word) std::memcpy(p + word * 64 + t * 4, blk.qs + 4 * word, 4);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, mn;
      UnpackScaleMinK4(blk.scales, j, &sc, &mn);
      p[2048 + j * 16 + t] = sc;
      p[2048 + 128 + (j / 2) * 32 + t * 2 + j % 2] = mn;
    }
    std::memcpy(p + 2048 + 128 + 128 + t * 2, &blk.d, 2);
    std::memcpy(p + 2048 + 128 + 128 + 32 + t * 2, &blk.dmin, 2);
  });
}

// A q6_k block's 256 quants, 0..63: element 128n + 32c + l has its low 4 bits
// in ql[64n + 32(c & 1) + l] (c < 2: low nibble, else high), its top 2 in bits
// 2c, 2c+1 of qh[32n + l].
void Q6Values(const BlockQ6_K& b, uint8_t* q) {
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 4; ++c) {
      const uint8_t* ql = b.ql + 64 * n + 32 * (c & 1);
      const int shift = 4 * (c >> 1);
      for (int l = 0; l < 32; ++l) {
        q[128 * n + 32 * c + l] = static_cast<uint8_t>(((ql[l] >> shift) & 0x0f) |
                                                       (((b.qh[32 * n + l] >> (2 * c)) & 3) << 4));
      }
    }
  }
}

// q6_k: per 16-row group and superblock, 3 words per sub-block j (16
// elements): byte i of row t's word 3j + k (k < 3) is q[16j + 4k + i] (6 bits)
// with bits 2k, 2k+1 of q[16j + 12 + i] on top, so the AVX2 kernel gets three
// quants with one and and the fourth from three 2-bit pieces. Then the 16 int8
// scales as bytes [j][row] and d as f16 [row]: 3360 bytes, exactly the 16
// blocks' size.
void PackQ6K(const WeightView& w, uint8_t* dst) {
  ForEachBlock<BlockQ6_K>(w, dst, kQKK, [](const BlockQ6_K& blk, uint8_t* p, int64_t t) {
    uint8_t q[kQKK];
    Q6Values(blk, q);
    for (int j = 0; j < 16; ++j) {
      for (int k = 0; k < 3; ++k) {
        uint8_t word[4];
        for (int i = 0; i < 4; ++i) {
          const int top = (q[16 * j + 12 + i] >> (2 * k)) & 3;
          word[i] = static_cast<uint8_t>(q[16 * j + 4 * k + i] | (top << 6));
        }
        std::memcpy(p + (3 * j + k) * 64 + t * 4, word, 4);
      }
      p[3072 + j * 16 + t] = static_cast<uint8_t>(blk.scales[j]);
    }
    std::memcpy(p + 3328 + t * 2, &blk.d, 2);
  });
}

// f16/bf16: per group of 8 rows, per 8-element chunk, the 8 rows' chunks one
// after another (8 x 16 bytes); rows past the end of the matrix are zeros.
void PackFloat16(const WeightView& w, uint8_t* dst) {
  const int64_t chunks = w.cols / 8, groups = (w.rows + 7) / 8;
  std::memset(dst, 0, static_cast<size_t>(groups * chunks * 128));
  for (int64_t r = 0; r < w.rows; ++r) {
    const auto* row = static_cast<const uint8_t*>(w.data) + r * w.row_bytes;
    uint8_t* g = dst + (r / 8) * chunks * 128 + (r % 8) * 16;
    for (int64_t c = 0; c < chunks; ++c) std::memcpy(g + c * 128, row + c * 16, 16);
  }
}

// The packed layouts, one row per type: rows per group, elements per block (f16:
// per 8-element chunk), bytes per (group, block), and the function that writes it.
struct PackedLayout {
  DType type;
  int64_t group_rows, block_elems, block_bytes;
  void (*pack)(const WeightView& w, uint8_t* dst);
};
constexpr PackedLayout kLayouts[] = {
    {DType::kQ8_0, 16, kQK, 512 + 32, Pack<BlockQ8_0>},
    {DType::kQ4_0, 16, kQK, 256 + 32, Pack<BlockQ4_0>},
    {DType::kQ4_1, 16, kQK, 256 + 64, Pack<BlockQ4_1>},
    {DType::kQ5_0, 16, kQK, 256 + 32 + 64, Pack<BlockQ5_0>},
    {DType::kQ5_1, 16, kQK, 256 + 64 + 64, Pack<BlockQ5_1>},
    {DType::kQ4_K, 16, kQKK, 2048 + 128 + 128 + 64, PackQ4K},
    {DType::kQ6_K, 16, kQKK, 2048 + 1024 + 256 + 32, PackQ6K},
    {DType::kF16, 8, 8, 128, PackFloat16},
    {DType::kBF16, 8, 8, 128, PackFloat16},
};

const PackedLayout* LayoutOf(DType t) {
  for (const PackedLayout& l : kLayouts) {
    if (l.type == t) return &l;
  }
  return nullptr;
}

}  // namespace

int64_t PackedBlockBytes(DType t) {
  const PackedLayout* l = LayoutOf(t);
  return l != nullptr ? l->block_bytes : 0;
}

int64_t PackedBytes(const WeightView& w) {
  const PackedLayout* l = LayoutOf(w.type);
  if (l == nullptr || w.cols % l->block_elems != 0) return 0;
  return (w.rows + l->group_rows - 1) / l->group_rows * (w.cols / l->block_elems) * l->block_bytes;
}

bool PackedLayoutUsed(DType t) {
  if (LayoutOf(t) == nullptr) return false;
  for (const MatMulKernel& k : MatMulKernels()) {
    if (k.type == t && k.packed != Packed::kNo && KernelRunsHere(k)) return true;
  }
  return false;
}

void PackWeights(const WeightView& w, void* dst) {
  STET_CHECK_MSG(PackedBytes(w) > 0, "PackWeights: no packed layout for this type");
  LayoutOf(w.type)->pack(w, static_cast<uint8_t*>(dst));
}

}  // namespace stet::kernels
