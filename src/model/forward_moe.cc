// The mixture-of-experts FFN (qwen3moe): a softmax router over expert_count
// experts, the top expert_used_count per row with their probabilities
// renormalized, each expert's SwiGLU over the rows that chose it, and the
// weighted sum in rank order. Everything a row gets depends on that row alone
// (its router logits, fixed tie-breaking, row-local MatMuls), so routing and
// mixing are batch-invariant by construction (R1, R2).
#include <algorithm>

#include "model/forward.h"
#include "numerics/math.h"

namespace stet {

namespace {

// The smallest sum of chosen probabilities divided by (as llama.cpp clamps it):
// keeps the weights finite when every chosen probability underflows.
constexpr float kMinWeightSum = 6.103515625e-5f;

// One row's routing: softmax of its logits (stet's ExpF, one left-to-right
// sum), the k most probable experts (ties to the lower index), and their
// probabilities divided by the chosen ones' sum. probs is scratch [n].
void Route(const float* logits, int n, int k, float* probs, int32_t* sel, float* weight) {
  float mx = logits[0];
  for (int e = 1; e < n; ++e) mx = std::max(mx, logits[e]);
  float sum = 0.0f;
  for (int e = 0; e < n; ++e) {
    probs[e] = ExpF(logits[e] - mx);
    sum += probs[e];
  }
  const float inv = 1.0f / sum;
  for (int e = 0; e < n; ++e) probs[e] = probs[e] * inv;
  float chosen_sum = 0.0f;
  for (int j = 0; j < k; ++j) {
    int best = -1;
    for (int e = 0; e < n; ++e) {
      if (std::find(sel, sel + j, e) != sel + j) continue;
      if (best < 0 || probs[e] > probs[best]) best = e;
    }
    sel[j] = best;
    chosen_sum += probs[best];
  }
  chosen_sum = std::max(chosen_sum, kMinWeightSum);
  for (int j = 0; j < k; ++j) weight[j] = probs[sel[j]] / chosen_sum;
}

}  // namespace

Status Forward::MoeFfn(const LayerWeights& L, const float* x, int64_t m, float* out) {
  const HParams& hp = model_.hparams();
  const Shard& sh = model_.shard();
  const int n_exp = hp.n_expert, k = hp.n_expert_used;
  const int64_t d = hp.n_embd, ff = sh.my_ff().size(), slots = m * k;
  // The router is whole on every rank: routing is the same everywhere.
  Grow(router_, static_cast<size_t>(m * n_exp + n_exp));
  MatMul(L.router, x, m, router_.data());
  float* probs = &router_[m * n_exp];
  Grow(moe_sel_, slots);
  Grow(moe_w_, slots);
  for (int64_t i = 0; i < m; ++i) {
    Route(&router_[i * n_exp], n_exp, k, probs, &moe_sel_[i * k], &moe_w_[i * k]);
  }

  // Group the (row, choice) slots by expert: a counting sort, slots in row
  // order; moe_where_[slot] is the slot's place in that order.
  moe_count_.assign(n_exp + 1, 0);
  for (int64_t s = 0; s < slots; ++s) ++moe_count_[moe_sel_[s] + 1];
  for (int e = 0; e < n_exp; ++e) moe_count_[e + 1] += moe_count_[e];
  Grow(moe_order_, slots);
  Grow(moe_where_, slots);
  {
    std::vector<int32_t> next(moe_count_.begin(), moe_count_.end() - 1);
    for (int64_t s = 0; s < slots; ++s) {
      moe_where_[s] = next[moe_sel_[s]];
      moe_order_[next[moe_sel_[s]]++] = static_cast<int32_t>(s);
    }
  }

  // Gate/up of every expert over its rows (this rank's FFN rows), in expert order.
  Grow(moe_x_, slots * d);
  Grow(moe_g_, slots * ff);
  Grow(moe_u_, slots * ff);
  for (int64_t j = 0; j < slots; ++j) std::copy_n(x + (moe_order_[j] / k) * d, d, &moe_x_[j * d]);
  for (int e = 0; e < n_exp; ++e) {
    const int64_t first = moe_count_[e], n = moe_count_[e + 1] - first;
    if (n == 0) continue;
    MatMuls({&L.gate_exps[e], &L.up_exps[e]}, &moe_x_[first * d], n,
            {&moe_g_[first * ff], &moe_u_[first * ff]});
  }
  kernels::SwiGlu(moe_g_.data(), moe_u_.data(), slots * ff, moe_g_.data(), isa_);
  const float* h = moe_g_.data();  // [slots, n_ff] once gathered
  if (comm_) {
    Grow(moe_h_, slots * hp.n_ff);
    STET_RETURN_IF_ERROR(GatherColumns(moe_g_.data(), slots, sh.ff, 1, moe_h_.data()));
    h = moe_h_.data();
  }
  // Down of every expert (this rank's output rows), then gathered: y[slots, d].
  Grow(moe_y_, slots * d);
  float* y_mine = moe_y_.data();
  if (comm_) {
    Grow(moe_y_local_, slots * sh.my_embd().size());
    y_mine = moe_y_local_.data();
  }
  const int64_t d_mine = sh.my_embd().size();
  for (int e = 0; e < n_exp; ++e) {
    const int64_t first = moe_count_[e], n = moe_count_[e + 1] - first;
    if (n == 0) continue;
    MatMul(L.down_exps[e], h + first * hp.n_ff, n, y_mine + first * d_mine);
  }
  if (comm_) STET_RETURN_IF_ERROR(GatherColumns(y_mine, slots, sh.embd, 1, moe_y_.data()));

  // out = w_0 y_0 + w_1 y_1 + ... in rank order, one rounding per operation.
  for (int64_t i = 0; i < m; ++i) {
    float* o = out + i * d;
    const float* w = &moe_w_[i * k];
    const float* y0 = &moe_y_[moe_where_[i * k] * d];
    for (int64_t c = 0; c < d; ++c) o[c] = w[0] * y0[c];
    for (int j = 1; j < k; ++j) {
      const float* yj = &moe_y_[moe_where_[i * k + j] * d];
      for (int64_t c = 0; c < d; ++c) o[c] = o[c] + w[j] * yj[c];
    }
  }
  return Status::Ok();
}

}  // namespace stet
