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

void Forward::MoeFfn(const LayerWeights& L, const float* x, int64_t m, float* out) {
  const HParams& hp = model_.hparams();
  const int n_exp = hp.n_expert, k = hp.n_expert_used;
  const int64_t d = hp.n_embd, ff = hp.n_ff;
  Grow(router_, static_cast<size_t>(m * n_exp + n_exp));
  MatMul(L.router, x, m, router_.data());
  float* probs = &router_[m * n_exp];
  Grow(moe_sel_, m * k);
  Grow(moe_w_, m * k);
  for (int64_t i = 0; i < m; ++i) {
    Route(&router_[i * n_exp], n_exp, k, probs, &moe_sel_[i * k], &moe_w_[i * k]);
  }

  // Group the (row, choice) slots by expert: a counting sort, slots in row order.
  moe_count_.assign(n_exp + 1, 0);
  for (int64_t s = 0; s < m * k; ++s) ++moe_count_[moe_sel_[s] + 1];
  for (int e = 0; e < n_exp; ++e) moe_count_[e + 1] += moe_count_[e];
  Grow(moe_order_, m * k);
  {
    std::vector<int32_t> next(moe_count_.begin(), moe_count_.end() - 1);
    for (int64_t s = 0; s < m * k; ++s) moe_order_[next[moe_sel_[s]]++] = static_cast<int32_t>(s);
  }

  Grow(moe_slot_out_, m * k * d);
  Grow(moe_x_, m * d);
  Grow(moe_g_, m * ff);
  Grow(moe_u_, m * ff);
  Grow(moe_y_, m * d);
  for (int e = 0; e < n_exp; ++e) {
    const int32_t* slots = &moe_order_[moe_count_[e]];
    const int64_t n = moe_count_[e + 1] - moe_count_[e];
    if (n == 0) continue;
    for (int64_t j = 0; j < n; ++j) {
      std::copy_n(x + (slots[j] / k) * d, d, &moe_x_[j * d]);
    }
    MatMuls({&L.gate_exps[e], &L.up_exps[e]}, moe_x_.data(), n, {moe_g_.data(), moe_u_.data()});
    kernels::SwiGlu(moe_g_.data(), moe_u_.data(), n * ff, moe_g_.data(), isa_);
    MatMul(L.down_exps[e], moe_g_.data(), n, moe_y_.data());
    for (int64_t j = 0; j < n; ++j) {
      std::copy_n(&moe_y_[j * d], d, &moe_slot_out_[slots[j] * d]);
    }
  }

  // out = w_0 y_0 + w_1 y_1 + ... in rank order, one rounding per operation.
  for (int64_t i = 0; i < m; ++i) {
    float* o = out + i * d;
    const float* y = &moe_slot_out_[i * k * d];
    const float* w = &moe_w_[i * k];
    for (int64_t c = 0; c < d; ++c) o[c] = w[0] * y[c];
    for (int j = 1; j < k; ++j) {
      for (int64_t c = 0; c < d; ++c) o[c] = o[c] + w[j] * y[j * d + c];
    }
  }
}

}  // namespace stet
