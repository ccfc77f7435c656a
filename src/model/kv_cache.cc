#include "model/kv_cache.h"

namespace stet {

KvCache::KvCache(const HParams& hp, int n_seq, int n_ctx, DType type)
    : type_(type), n_layer_(hp.n_layer), n_seq_(n_seq), n_ctx_(n_ctx) {
  STET_CHECK(type == DType::kF32 || type == DType::kF16);
  row_bytes_ = static_cast<int64_t>(hp.kv_dim()) * (type == DType::kF32 ? 4 : 2);
  const size_t total = static_cast<size_t>(n_layer_) * n_seq_ * n_ctx_ * row_bytes_;
  k_.assign(total, 0);
  v_.assign(total, 0);
}

}  // namespace stet
