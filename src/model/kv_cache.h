// Key/value cache: for each layer, sequence slot and absolute position, one K
// row and one V row of kv_dim elements in the storage type (f32 or f16). The
// forward pass writes a token's K/V here before any attention reads them, and
// attention reads only from here (rule R3), so a cache hit and a recompute see
// the same rounded values.
#pragma once

#include <cstdint>
#include <vector>

#include "base/check.h"
#include "model/hparams.h"
#include "numerics/dtype.h"

namespace stet {

class KvCache {
 public:
  KvCache(const HParams& hp, int n_seq, int n_ctx, DType type);

  DType type() const { return type_; }
  int n_seq() const { return n_seq_; }
  int n_ctx() const { return n_ctx_; }
  int64_t row_bytes() const { return row_bytes_; }
  int64_t size_bytes() const { return static_cast<int64_t>(k_.size() + v_.size()); }

  uint8_t* K(int layer, int seq, int pos) { return k_.data() + Offset(layer, seq, pos); }
  uint8_t* V(int layer, int seq, int pos) { return v_.data() + Offset(layer, seq, pos); }

 private:
  int64_t Offset(int layer, int seq, int pos) const {
    STET_CHECK(layer >= 0 && layer < n_layer_ && seq >= 0 && seq < n_seq_ && pos >= 0 &&
               pos < n_ctx_);
    return ((static_cast<int64_t>(layer) * n_seq_ + seq) * n_ctx_ + pos) * row_bytes_;
  }

  DType type_;
  int n_layer_, n_seq_, n_ctx_;
  int64_t row_bytes_;
  std::vector<uint8_t> k_, v_;
};

}  // namespace stet
