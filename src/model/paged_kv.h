// Paged KV storage: a pool of fixed-size blocks (block_size positions each,
// all layers), and per sequence slot a block table mapping position / block_size
// to a block. The pool is laid out [layer][KV head][block][position][head_dim]:
// one head's rows of a layer lie together, block after block, so attention over
// a head streams its rows (one contiguous run over a sequence whose blocks are
// consecutive) instead of picking its part out of every position's full row —
// at long context that walk was DRAM-latency bound (3x slower, same bytes). Blocks can be shared
// between slots (prefix cache); who owns and frees them is the engine's business
// (engine/block_manager.h). The numbers a block holds do not depend on which slot or batch computed
// them (R1–R3).
#pragma once

#include <cstdint>
#include <vector>

#include "model/kv_cache.h"
#include "model/model.h"

namespace stet {

class PagedKvCache : public KvStore {
 public:
  PagedKvCache(const HParams& hp, int n_blocks, int block_size, int n_slots, DType type);
  // For a model shard: rows of its own KV heads only (Forward::KvRowBytes).
  PagedKvCache(const Model& model, int n_blocks, int block_size, int n_slots, DType type);
  // n_seq slots that each own ceil(n_ctx / block_size) blocks, slot by slot
  // (for callers without a block manager: tests, benchmarks).
  static PagedKvCache Contiguous(const HParams& hp, int n_seq, int n_ctx, DType type,
                                 int block_size = 16);
  // Splits the blocks evenly among the slots, for callers without a block manager: slot by
  // slot, or interleaved across the slots as a free list hands them out under load.
  void SplitBlocks(bool interleaved);

  DType type() const override { return type_; }
  int64_t row_bytes() const override { return row_bytes_; }
  bool Has(int seq, int pos) const override;
  uint8_t* K(int layer, int seq, int pos, int head) override {
    return Row(k_, layer, seq, pos, head);
  }
  uint8_t* V(int layer, int seq, int pos, int head) override {
    return Row(v_, layer, seq, pos, head);
  }
  // The slot's block table read in place: no copy of its history per step.
  kernels::KvRows KRows(int layer, int seq, int head) override {
    return Rows(k_, layer, seq, head);
  }
  kernels::KvRows VRows(int layer, int seq, int head) override {
    return Rows(v_, layer, seq, head);
  }
  int n_slots() const { return static_cast<int>(tables_.size()); }
  int n_blocks() const { return n_blocks_; }
  int block_size() const { return block_size_; }
  // The blocks backing slot `seq`, in position order.
  const std::vector<int32_t>& BlockTable(int seq) const { return tables_[seq]; }

  // The blocks backing slot `seq`, in position order.
  void SetBlockTable(int seq, std::vector<int32_t> blocks);

 private:
  // KV head h of layer l: the pool's run (l * n_heads + h) * head_run_bytes();
  // block b's rows at b * block_size * head_bytes_ in it.
  int64_t head_run_bytes() const {
    return static_cast<int64_t>(n_blocks_) * block_size_ * head_bytes_;
  }
  int64_t HeadBase(int layer, int head) const {
    return (static_cast<int64_t>(layer) * n_heads_ + head) * head_run_bytes();
  }
  uint8_t* Row(std::vector<uint8_t>& pool, int layer, int seq, int pos, int head) {
    STET_CHECK(Has(seq, pos) && layer >= 0 && layer < n_layer_ && head >= 0 && head < n_heads_);
    const int64_t block = tables_[seq][pos / block_size_];
    return pool.data() + HeadBase(layer, head) +
           (block * block_size_ + pos % block_size_) * head_bytes_;
  }
  kernels::KvRows Rows(const std::vector<uint8_t>& pool, int layer, int seq, int head) const {
    STET_CHECK(seq >= 0 && seq < n_slots() && layer >= 0 && layer < n_layer_ && head >= 0 &&
               head < n_heads_);
    return {pool.data() + HeadBase(layer, head), head_bytes_, tables_[seq].data(), block_size_};
  }
  PagedKvCache(int n_layer, int n_heads, int64_t head_dim, int n_blocks, int block_size,
               int n_slots, DType type);
  DType type_;
  int n_layer_, n_heads_, n_blocks_, block_size_;
  int64_t head_bytes_, row_bytes_;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<uint8_t> k_, v_;
};

}  // namespace stet
