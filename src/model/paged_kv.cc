#include "model/paged_kv.h"

namespace stet {

PagedKvCache::PagedKvCache(const HParams& hp, int n_blocks, int block_size, int n_slots, DType type)
    : PagedKvCache(hp.n_layer, hp.n_head_kv, hp.head_dim, n_blocks, block_size, n_slots, type) {}

PagedKvCache::PagedKvCache(const Model& model, int n_blocks, int block_size, int n_slots,
                           DType type)
    : PagedKvCache(model.hparams().n_layer, static_cast<int>(model.shard().my_kv_heads().size()),
                   model.hparams().head_dim, n_blocks, block_size, n_slots, type) {}

PagedKvCache::PagedKvCache(int n_layer, int n_heads, int64_t head_dim, int n_blocks, int block_size,
                           int n_slots, DType type)
    : type_(type),
      n_layer_(n_layer),
      n_heads_(n_heads),
      n_blocks_(n_blocks),
      block_size_(block_size) {
  STET_CHECK(type == DType::kF32 || type == DType::kF16);
  STET_CHECK(n_blocks > 0 && block_size > 0 && n_slots > 0 && n_heads > 0 && head_dim > 0);
  head_bytes_ = head_dim * (type == DType::kF32 ? 4 : 2);
  row_bytes_ = n_heads * head_bytes_;
  const size_t total = static_cast<size_t>(n_layer_) * n_blocks_ * block_size_ * row_bytes_;
  k_.assign(total, 0);
  v_.assign(total, 0);
  tables_.resize(n_slots);
}

PagedKvCache PagedKvCache::Contiguous(const HParams& hp, int n_seq, int n_ctx, DType type,
                                      int block_size) {
  const int per_seq = (n_ctx + block_size - 1) / block_size;
  PagedKvCache kv(hp, n_seq * per_seq, block_size, n_seq, type);
  kv.SplitBlocks(/*interleaved=*/false);
  return kv;
}

void PagedKvCache::SplitBlocks(bool interleaved) {
  const int n_seq = n_slots(), per_seq = n_blocks_ / n_seq;
  for (int s = 0; s < n_seq; ++s) {
    std::vector<int32_t> table(per_seq);
    for (int b = 0; b < per_seq; ++b) table[b] = interleaved ? b * n_seq + s : s * per_seq + b;
    SetBlockTable(s, std::move(table));
  }
}

bool PagedKvCache::Has(int seq, int pos) const {
  if (seq < 0 || seq >= static_cast<int>(tables_.size()) || pos < 0) return false;
  return static_cast<size_t>(pos / block_size_) < tables_[seq].size();
}

void PagedKvCache::SetBlockTable(int seq, std::vector<int32_t> blocks) {
  STET_CHECK(seq >= 0 && seq < static_cast<int>(tables_.size()));
  for (int32_t b : blocks) STET_CHECK(b >= 0 && b < n_blocks_);
  tables_[seq] = std::move(blocks);
}

}  // namespace stet
