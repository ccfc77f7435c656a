// The tensor-parallel protocol's payloads: a step and a configuration survive
// encoding; a step names only the blocks its positions need; anything a worker
// could not run (a truncated payload, a block or slot outside the pool, a
// frame of unknown kind) is an error naming the problem, never a crash.
#include "dist/wire.h"

#include <gtest/gtest.h>

#include <thread>

#include "dist/local_group.h"

namespace stet::dist {
namespace {

TEST(Wire, StepRoundTripsWithTheBlocksItReads) {
  HParams hp;
  hp.n_layer = 1;
  hp.n_head = 2;
  hp.n_head_kv = 1;
  hp.head_dim = 4;
  PagedKvCache kv(hp, 10, 4, 3, DType::kF16);
  kv.SetBlockTable(0, {7, 2, 5, 9});
  kv.SetBlockTable(2, {1, 3});
  const std::vector<BatchToken> batch = {{5, 6, 0, false}, {9, 7, 0, true}, {3, 1, 2, true}};
  const StepDesc d = DescribeStep(batch, kv);
  EXPECT_EQ(d.tables.size(), 2u);
  EXPECT_EQ(d.tables[0].second, (std::vector<int32_t>{7, 2}));  // position 7: blocks 0..1
  EXPECT_EQ(d.tables[1].second, (std::vector<int32_t>{1}));
  auto back = DecodeStep(EncodeStep(d));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->n_blocks, 10);
  EXPECT_EQ(back->block_size, 4);
  ASSERT_EQ(back->batch.size(), 3u);
  EXPECT_EQ(back->batch[1].token, 9);
  EXPECT_TRUE(back->batch[1].logits);
  EXPECT_FALSE(back->batch[0].logits);
  EXPECT_EQ(back->tables, d.tables);
}

TEST(Wire, MalformedPayloadsAreErrors) {
  StepDesc d;
  d.n_blocks = 4;
  d.block_size = 16;
  d.n_slots = 2;
  d.batch = {{1, 0, 0, true}};
  d.tables = {{0, {3}}};
  const std::string good = EncodeStep(d);
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(DecodeStep(good.substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(DecodeStep(good + "x").ok());
  StepDesc bad_block = d;
  bad_block.tables = {{0, {4}}};  // outside the 4-block pool
  EXPECT_FALSE(DecodeStep(EncodeStep(bad_block)).ok());
  StepDesc bad_slot = d;
  bad_slot.tables = {{2, {0}}};
  EXPECT_FALSE(DecodeStep(EncodeStep(bad_slot)).ok());
  GroupConfig c{"/m.gguf", 256, NumericsMode::kInvariant, Isa::kAvx2, 3};
  auto cc = DecodeConfig(EncodeConfig(c));
  ASSERT_TRUE(cc.ok());
  EXPECT_EQ(cc->model_path, "/m.gguf");
  EXPECT_EQ(cc->n_threads, 3);
  EXPECT_EQ(cc->isa, Isa::kAvx2);
  // Every numerics mode and ISA choice (kAuto included) reaches the workers.
  for (NumericsMode m : {NumericsMode::kInvariant, NumericsMode::kAdaptive, NumericsMode::kFast,
                         NumericsMode::kPrecise}) {
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon, Isa::kAuto}) {
      auto one = DecodeConfig(EncodeConfig({"/m.gguf", 256, m, isa, 1}));
      ASSERT_TRUE(one.ok()) << NumericsModeName(m) << " " << IsaName(isa);
      EXPECT_EQ(one->numerics, m);
      EXPECT_EQ(one->isa, isa);
    }
  }
  auto err = DecodeConfig(EncodeConfig(c).substr(1));
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("malformed"), std::string::npos);
}

// Frames over a group: an inline payload, one past the frame's size, and the
// kinds a worker knows; a rank that never answers is a timeout, not a hang.
TEST(Wire, FramesCrossTheGroup) {
  LocalGroup g(2, 1.0);
  const std::string big(5000, 'z');
  std::thread worker([&] {
    auto a = ReceiveFrame(g.comm(1), 5);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->kind, FrameKind::kPing);
    EXPECT_EQ(a->payload, "hi");
    auto b = ReceiveFrame(g.comm(1), 5);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->kind, FrameKind::kStep);
    EXPECT_EQ(b->payload, big);
  });
  EXPECT_TRUE(SendFrame(g.comm(0), FrameKind::kPing, "hi").ok());
  EXPECT_TRUE(SendFrame(g.comm(0), FrameKind::kStep, big).ok());
  worker.join();
  Status lonely = SendFrame(g.comm(0), FrameKind::kQuit, "");  // nobody receives it
  EXPECT_FALSE(lonely.ok());
  EXPECT_NE(lonely.message().find("tensor parallelism"), std::string::npos);
}

}  // namespace
}  // namespace stet::dist
