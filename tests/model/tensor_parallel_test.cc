// PlanShard: every rank's spans tile each dimension in rank order without gaps
// or overlaps (heads whole, 16-row units where there are rows enough), KV
// heads follow their query heads (replicated only past the KV heads), and an
// impossible rank count is refused with the largest one the model takes.
#include "model/tensor_parallel.h"

#include <gtest/gtest.h>

namespace stet {
namespace {

HParams Shape(int n_head, int n_head_kv, int embd, int ff, int vocab) {
  static const ArchSpec& arch = LlamaArch();
  HParams hp;
  hp.arch = &arch;
  hp.n_head = n_head;
  hp.n_head_kv = n_head_kv;
  hp.head_dim = embd / n_head;
  hp.n_embd = embd;
  hp.n_ff = ff;
  hp.n_vocab = vocab;
  return hp;
}

void ExpectTiles(const std::vector<RowSpan>& spans, int64_t n, const char* what) {
  int64_t at = 0;
  for (const RowSpan& s : spans) {
    EXPECT_EQ(s.begin, at) << what;
    EXPECT_GT(s.size(), 0) << what;
    at = s.end;
  }
  EXPECT_EQ(at, n) << what;
}

TEST(PlanShard, SpansTileEveryDimensionForEveryRankCount) {
  for (const HParams& hp : {Shape(9, 3, 576, 1536, 49152), Shape(4, 1, 640, 2048, 262144),
                            Shape(32, 8, 2048, 8192, 128256), Shape(8, 4, 64, 172, 512)}) {
    for (int n = 1; n <= MaxRanks(hp); ++n) {
      for (int r = 0; r < n; ++r) {
        auto s = PlanShard(hp, r, n);
        ASSERT_TRUE(s.ok()) << s.status().ToString();
        EXPECT_EQ(s->rank, r);
        ExpectTiles(s->q_heads, hp.n_head, "query heads");
        ExpectTiles(s->embd, hp.n_embd, "embd");
        ExpectTiles(s->ff, hp.n_ff, "ff");
        ExpectTiles(s->vocab, hp.n_vocab, "vocab");
        const int group = hp.n_head / hp.n_head_kv;
        for (int k = 0; k < n; ++k) {  // each rank's KV heads are those its queries read
          EXPECT_EQ(s->kv_heads[k].begin, s->q_heads[k].begin / group);
          EXPECT_EQ(s->kv_heads[k].end, (s->q_heads[k].end - 1) / group + 1);
        }
        if (n <= hp.n_head_kv) ExpectTiles(s->kv_heads, hp.n_head_kv, "kv heads (no overlap)");
        for (int k = 0; k + 1 < n; ++k) {  // 16-row units where every rank gets one
          if (hp.n_embd >= 16 * n) {
            EXPECT_EQ(s->embd[k].end % 16, 0);
          }
          if (hp.n_vocab >= 16 * n) {
            EXPECT_EQ(s->vocab[k].end % 16, 0);
          }
        }
      }
    }
  }
}

TEST(PlanShard, UnevenAndReplicatedSplits) {
  const HParams smol = Shape(9, 3, 576, 1536, 49152);
  auto two = PlanShard(smol, 1, 2);  // KV groups: 1 and 2 of the 3
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->kv_heads[0], (RowSpan{0, 1}));
  EXPECT_EQ(two->q_heads[1], (RowSpan{3, 9}));
  auto four = PlanShard(smol, 0, 4);  // past the KV heads: query heads 2, 2, 2, 3
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(four->q_heads[1], (RowSpan{2, 4}));
  EXPECT_EQ(four->kv_heads[1], (RowSpan{0, 2}));  // heads 2 and 3 read KV heads 0 and 1
  const HParams gemma = Shape(4, 1, 640, 2048, 262144);
  auto g3 = PlanShard(gemma, 2, 3);
  ASSERT_TRUE(g3.ok());
  for (const RowSpan& kv : g3->kv_heads) EXPECT_EQ(kv, (RowSpan{0, 1}));  // replicated
}

TEST(PlanShard, ImpossibleRankCountsAreClearErrors) {
  const HParams gemma = Shape(4, 1, 640, 2048, 262144);
  EXPECT_EQ(MaxRanks(gemma), 4);
  auto five = PlanShard(gemma, 0, 5);
  ASSERT_FALSE(five.ok());
  EXPECT_EQ(five.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(five.status().message().find("at most 4 ranks"), std::string::npos);
  EXPECT_FALSE(PlanShard(gemma, 2, 2).ok());
  EXPECT_FALSE(PlanShard(gemma, 0, 0).ok());
  EXPECT_FALSE(PlanShard(gemma, -1, 2).ok());
}

}  // namespace
}  // namespace stet
