// Paged KV storage: a pool of fixed-size blocks (block_size positions each,
// all layers), and per sequence slot a block table mapping position / block_size
// to a block. Blocks can be shared between slots (prefix cache); who owns and
// frees them is the engine's business (engine/block_manager.h). The numbers a
// block holds do not depend on which slot or batch computed them (R1–R3).
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
  uint8_t* K(int layer, int seq, int pos) override { return Row(k_, layer, seq, pos); }
  uint8_t* V(int layer, int seq, int pos) override { return Row(v_, layer, seq, pos); }
  // The slot's block table read in place: no copy of its history per step.
  kernels::KvRows KRows(int layer, int seq) override { return Rows(k_, layer, seq); }
  kernels::KvRows VRows(int layer, int seq) override { return Rows(v_, layer, seq); }

  int n_slots() const { return static_cast<int>(tables_.size()); }
  int n_blocks() const { return n_blocks_; }
  int block_size() const { return block_size_; }
  // The blocks backing slot `seq`, in position order.
  const std::vector<int32_t>& BlockTable(int seq) const { return tables_[seq]; }

  // The blocks backing slot `seq`, in position order.
  void SetBlockTable(int seq, std::vector<int32_t> blocks);

 private:
  uint8_t* Row(std::vector<uint8_t>& pool, int layer, int seq, int pos) {
    STET_CHECK(Has(seq, pos) && layer >= 0 && layer < n_layer_);
    const int64_t block = tables_[seq][pos / block_size_];
    return pool.data() +
           ((static_cast<int64_t>(layer) * n_blocks_ + block) * block_size_ + pos % block_size_) *
               row_bytes_;
  }

  kernels::KvRows Rows(const std::vector<uint8_t>& pool, int layer, int seq) const {
    STET_CHECK(seq >= 0 && seq < n_slots() && layer >= 0 && layer < n_layer_);
    return {pool.data() + static_cast<int64_t>(layer) * n_blocks_ * block_size_ * row_bytes_,
            row_bytes_, tables_[seq].data(), block_size_};
  }

  PagedKvCache(int n_layer, int64_t kv_dim, int n_blocks, int block_size, int n_slots, DType type);

  DType type_;
  int n_layer_, n_blocks_, block_size_;
  int64_t row_bytes_;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<uint8_t> k_, v_;
};

}  // namespace stet
