// Tensor parallelism's contract at the model layer: how one model is split
// across n ranks (Shard: which rows of every weight, which heads, which
// vocabulary rows a rank holds) and the collectives the forward pass joins the
// pieces with (TpComm). Owns the invariant that makes the output independent
// of n: every output element is computed whole on one rank, by the same
// row-local kernel in the same order as one process; ranks only exchange
// finished elements (all-gathers), never partial sums.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/hparams.h"

namespace stet {

// Rows [begin, end) of a dimension (heads, matrix rows, vocabulary entries).
struct RowSpan {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const RowSpan&) const = default;
};

// Every rank's share (indexed by rank: the gathers need everyone's counts).
// Attention is split by KV-head groups while n_ranks <= n_head_kv (a rank
// holds whole groups: its KV heads and their query heads); past that by query
// heads, each rank computing the KV heads its query heads read (replicated
// K/V projection, as vLLM does). wo, w_down and the experts' down matrices are
// split by output rows (embd), gate/up (each expert's too: a MoE's n_ff is the
// expert width) by rows of the FFN width (ff), the embedding and output matrices by vocabulary
// rows. The router (MoE) and the norms are replicated: every rank computes them whole, in the same
// order.
struct Shard {
  int rank = 0;
  int n_ranks = 1;
  std::vector<RowSpan> q_heads, kv_heads, embd, ff, vocab;

  bool whole() const { return n_ranks == 1; }
  const RowSpan& my_q_heads() const { return q_heads[rank]; }
  const RowSpan& my_kv_heads() const { return kv_heads[rank]; }
  const RowSpan& my_embd() const { return embd[rank]; }
  const RowSpan& my_ff() const { return ff[rank]; }
  const RowSpan& my_vocab() const { return vocab[rank]; }
};

// Rank `rank` of `n_ranks`. InvalidArgument when the model cannot be split n
// ways (more ranks than query heads: a head is never split, its dot products
// would be), naming the largest n the model takes.
Result<Shard> PlanShard(const HParams& hp, int rank, int n_ranks);
// The one-process shard: everything on rank 0.
Shard WholeShard(const HParams& hp);
// The largest rank count PlanShard accepts for this model.
int MaxRanks(const HParams& hp);

// The collectives of one tensor-parallel group (implementations: src/dist).
// Every rank calls the same collectives in the same order. Each waits at most
// timeout_s for the other ranks (0: the group's step timeout, step_timeout())
// and then returns an error: a rank that died or hangs never hangs the others.
// After one error the group is broken for good (every later call fails).
class TpComm {
 public:
  virtual ~TpComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual double step_timeout() const = 0;
  // out (every rank) = rank 0's bytes[0..counts[0]), rank 1's, ... in rank order.
  virtual Status AllGather(const void* mine, const int64_t* counts, void* out,
                           double timeout_s = 0) = 0;
  // The same concatenation into rank 0's out only (out is unused elsewhere).
  virtual Status Gather(const void* mine, const int64_t* counts, void* out,
                        double timeout_s = 0) = 0;
  // Rank 0's `bytes` bytes into data on every rank.
  virtual Status Broadcast(void* data, int64_t bytes, double timeout_s = 0) = 0;
  // Payload bytes this rank has sent so far (to every other rank that got them).
  virtual int64_t bytes_sent() const = 0;
  // From now on no collective (the one waiting now included) waits more than
  // `seconds`: a shutdown, where a rank that is gone must not hold the drain
  // past the launcher's kill. Thread-safe (the signal thread calls it).
  virtual void Hurry(double seconds) = 0;
};

}  // namespace stet
