// PlanShard: the split of a model across ranks (tensor_parallel.h). Pure
// arithmetic on the hyper-parameters, so every rank computes the same plan.
#include "model/tensor_parallel.h"

#include <algorithm>

namespace stet {

namespace {

// n rows in `parts` contiguous spans of near-equal size, each a multiple of
// `align` rows except the last (16: the packed 16-row groups of the matmul
// kernels stay whole) when there are enough rows for that, else of 1 row.
std::vector<RowSpan> Split(int64_t n, int parts, int64_t align) {
  const int64_t unit = n >= align * parts ? align : 1;
  const int64_t units = n / unit;
  std::vector<RowSpan> out(parts);
  for (int i = 0; i < parts; ++i) {
    out[i].begin = i * units / parts * unit;
    out[i].end = i + 1 == parts ? n : (i + 1) * units / parts * unit;
  }
  return out;
}

constexpr int64_t kRowAlign = 16;

}  // namespace

int MaxRanks(const HParams& hp) {
  int64_t m = std::min<int64_t>({hp.n_head, hp.n_embd, hp.n_vocab});
  m = std::min<int64_t>(m, hp.n_ff);
  return static_cast<int>(std::max<int64_t>(m, 1));
}

Shard WholeShard(const HParams& hp) {
  Shard s;
  s.q_heads = {{0, hp.n_head}};
  s.kv_heads = {{0, hp.n_head_kv}};
  s.embd = {{0, hp.n_embd}};
  s.ff = {{0, hp.n_ff}};
  s.vocab = {{0, hp.n_vocab}};
  return s;
}

Result<Shard> PlanShard(const HParams& hp, int rank, int n_ranks) {
  if (n_ranks < 1 || rank < 0 || rank >= n_ranks) {
    return InvalidArgument("tensor parallelism: rank " + std::to_string(rank) + " of " +
                           std::to_string(n_ranks) + " ranks is not a valid rank");
  }
  const int max = MaxRanks(hp);
  if (n_ranks > max) {
    return InvalidArgument("tensor parallelism: this " + std::string(hp.arch->name) +
                           " model has " + std::to_string(hp.n_head) +
                           " query heads and splits across at most " + std::to_string(max) +
                           " ranks (a head is never split); got " + std::to_string(n_ranks) +
                           " ranks");
  }
  if (n_ranks == 1) return WholeShard(hp);
  Shard s;
  s.rank = rank;
  s.n_ranks = n_ranks;
  const int group = hp.n_head / hp.n_head_kv;
  if (n_ranks <= hp.n_head_kv) {  // whole KV groups: no K/V computed twice
    s.kv_heads = Split(hp.n_head_kv, n_ranks, 1);
    for (const RowSpan& kv : s.kv_heads) s.q_heads.push_back({kv.begin * group, kv.end * group});
  } else {  // query heads; each rank computes the KV heads they read
    s.q_heads = Split(hp.n_head, n_ranks, 1);
    for (const RowSpan& q : s.q_heads)
      s.kv_heads.push_back({q.begin / group, (q.end - 1) / group + 1});
  }
  s.embd = Split(hp.n_embd, n_ranks, kRowAlign);
  s.ff = Split(hp.n_ff, n_ranks, kRowAlign);
  s.vocab = Split(hp.n_vocab, n_ranks, kRowAlign);
  return s;
}

}  // namespace stet
