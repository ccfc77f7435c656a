// The paged KV pool's layout: every (layer, slot, position, KV head) row the
// forward pass writes (K/V) is where attention reads it (KRows/VRows), rows
// never overlap, and one head's rows over consecutive blocks form one run in
// memory (the stream attention walks at long context).
#include "model/paged_kv.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace stet {
namespace {

HParams Shape() {
  HParams hp;
  hp.n_layer = 2;
  hp.n_head = 6;
  hp.n_head_kv = 3;
  hp.head_dim = 8;
  hp.n_embd = 48;
  return hp;
}

TEST(PagedKv, WritersAndAttentionAgreeOnEveryRow) {
  const HParams hp = Shape();
  for (DType type : {DType::kF16, DType::kF32}) {
    const int block = 4;
    PagedKvCache kv(hp, /*n_blocks=*/6, block, /*n_slots=*/2, type);
    kv.SetBlockTable(0, {2, 0, 5});
    kv.SetBlockTable(1, {1, 3});
    const int64_t head_bytes = hp.head_dim * (type == DType::kF32 ? 4 : 2);
    EXPECT_EQ(kv.row_bytes(), hp.n_head_kv * head_bytes);
    std::map<const uint8_t*, int> owner;  // row start -> how many rows start there
    for (int l = 0; l < hp.n_layer; ++l) {
      for (int s = 0; s < 2; ++s) {
        const int n_pos = s == 0 ? 12 : 8;
        for (int h = 0; h < hp.n_head_kv; ++h) {
          const kernels::KvRows kr = kv.KRows(l, s, h), vr = kv.VRows(l, s, h);
          EXPECT_EQ(kr.row_stride, head_bytes);
          for (int p = 0; p < n_pos; ++p) {
            ASSERT_EQ(kv.K(l, s, p, h), kr.Row(p)) << l << " " << s << " " << p << " " << h;
            ASSERT_EQ(kv.V(l, s, p, h), vr.Row(p)) << l << " " << s << " " << p << " " << h;
            ++owner[kv.K(l, s, p, h)];
          }
        }
      }
    }
    // 2 layers x 5 blocks in use x 4 positions x 3 heads, no two alike, and
    // head_bytes apart at least (rows never overlap).
    EXPECT_EQ(owner.size(), 2u * 5 * 4 * 3);
    const uint8_t* prev = nullptr;
    for (const auto& [row, n] : owner) {
      EXPECT_EQ(n, 1);
      if (prev != nullptr) {
        EXPECT_GE(row - prev, head_bytes);
      }
      prev = row;
    }
  }
}

TEST(PagedKv, AHeadsRowsOverConsecutiveBlocksAreOneRun) {
  const HParams hp = Shape();
  PagedKvCache kv(hp, /*n_blocks=*/8, /*block_size=*/4, /*n_slots=*/1, DType::kF16);
  kv.SetBlockTable(0, {3, 4, 5, 6});
  const int64_t head_bytes = hp.head_dim * 2;
  for (int l = 0; l < hp.n_layer; ++l) {
    for (int h = 0; h < hp.n_head_kv; ++h) {
      const kernels::KvRows kr = kv.KRows(l, 0, h);
      for (int p = 1; p < 16; ++p) EXPECT_EQ(kr.Row(p) - kr.Row(p - 1), head_bytes) << p;
    }
  }
}

}  // namespace
}  // namespace stet
