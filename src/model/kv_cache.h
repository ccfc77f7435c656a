// Key/value storage for the forward pass. For each layer, sequence slot and
// absolute position there is one K row and one V row of kv_dim elements in the
// storage type (f32 or f16). The forward pass writes a token's K/V before any
// attention reads them, and attention reads only from here (rule R3), so a
// prefix-cache hit and a recompute see the same rounded values.
#pragma once

#include <cstdint>
#include <vector>

#include "base/check.h"
#include "kernels/kv_rows.h"
#include "model/hparams.h"
#include "numerics/dtype.h"

namespace stet {

class KvStore {
 public:
  virtual ~KvStore() = default;
  virtual DType type() const = 0;
  virtual int64_t row_bytes() const = 0;  // kv_dim elements of type()
  // Whether (seq, pos) has storage (slot exists, position within its capacity).
  virtual bool Has(int seq, int pos) const = 0;
  virtual uint8_t* K(int layer, int seq, int pos) = 0;
  virtual uint8_t* V(int layer, int seq, int pos) = 0;
  // Where attention reads the K/V rows of (layer, seq) in place (kv_rows.h);
  // valid until the slot's storage changes.
  virtual kernels::KvRows KRows(int layer, int seq) = 0;
  virtual kernels::KvRows VRows(int layer, int seq) = 0;
};

// One contiguous region per (layer, slot): simple and gather-free; used by
// single-sequence sessions and tests.
class KvCache : public KvStore {
 public:
  KvCache(const HParams& hp, int n_seq, int n_ctx, DType type);

  DType type() const override { return type_; }
  int64_t row_bytes() const override { return row_bytes_; }
  bool Has(int seq, int pos) const override {
    return seq >= 0 && seq < n_seq_ && pos >= 0 && pos < n_ctx_;
  }
  uint8_t* K(int layer, int seq, int pos) override { return k_.data() + Offset(layer, seq, pos); }
  uint8_t* V(int layer, int seq, int pos) override { return v_.data() + Offset(layer, seq, pos); }
  kernels::KvRows KRows(int layer, int seq) override { return {K(layer, seq, 0), row_bytes_}; }
  kernels::KvRows VRows(int layer, int seq) override { return {V(layer, seq, 0), row_bytes_}; }

  int n_seq() const { return n_seq_; }
  int n_ctx() const { return n_ctx_; }
  int64_t size_bytes() const { return static_cast<int64_t>(k_.size() + v_.size()); }

 private:
  int64_t Offset(int layer, int seq, int pos) const {
    STET_CHECK(layer >= 0 && layer < n_layer_ && Has(seq, pos));
    return ((static_cast<int64_t>(layer) * n_seq_ + seq) * n_ctx_ + pos) * row_bytes_;
  }

  DType type_;
  int n_layer_, n_seq_, n_ctx_;
  int64_t row_bytes_;
  std::vector<uint8_t> k_, v_;
};

}  // namespace stet
