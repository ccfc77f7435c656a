// Key/value storage for the forward pass (the implementation: the paged cache,
// model/paged_kv.h). For each layer, sequence slot, absolute position and KV head
// there is one K row and one V row of head_dim elements in the storage type (f32 or f16);
// where they lie is the store's business (attention reads a head's rows through KvRows). The
// forward pass writes a token's K/V before any attention reads them, and attention reads only from
// here (rule R3), so a prefix-cache hit and a recompute see the same rounded values.
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
  virtual int64_t row_bytes() const = 0;  // kv_dim elements of type(): every KV head's
  // Whether (seq, pos) has storage (slot exists, position within its capacity).
  virtual bool Has(int seq, int pos) const = 0;
  // KV head `head`'s row (head_dim elements) at (layer, seq, pos).
  virtual uint8_t* K(int layer, int seq, int pos, int head) = 0;
  virtual uint8_t* V(int layer, int seq, int pos, int head) = 0;
  // Where attention reads KV head `head`'s K/V rows of (layer, seq) in place
  // (kv_rows.h); valid until the slot's storage changes.
  virtual kernels::KvRows KRows(int layer, int seq, int head) = 0;
  virtual kernels::KvRows VRows(int layer, int seq, int head) = 0;
};

}  // namespace stet
