// RoPE inverse frequencies (with linear, Llama 3 and YaRN scaling, and GGUF's per-frequency
// rope_freqs factors) and the cos/sin tables the rope kernel reads. Everything is computed
// in double with stet's own PowD/LogD/SinCosD and rounded once to float, so a table has the
// same bits on every machine (rule R5). Pinned by tests/numerics/rope_table_test.cc.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace stet {

// How a model stretches RoPE past its training context. Field names follow the
// Hugging Face `rope_scaling` config; each kind reads only the fields named at it.
struct RopeScaling {
  enum class Kind {
    kNone,
    kLinear,  // "linear": every frequency divided by `factor` (= positions / factor)
    kLlama3,  // "llama3" (Llama 3.1+): factor, low/high_freq_factor,
              // original_max_position_embeddings
    kYarn,    // "yarn": factor, beta_fast, beta_slow, original_max_position_embeddings,
              // attention_factor
  };
  Kind kind = Kind::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_max_position_embeddings = 8192.0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  // YaRN's multiplier on cos and sin; 0 means the default 0.1 * ln(factor) + 1.
  double attention_factor = 0.0;
};

// Largest |angle| a table may hold (SinCosD's exact-reduction range); with inverse
// frequencies <= 1 that is 2.7e8 positions.
constexpr double kRopeMaxAngle = 268435456.0;  // 2^28

// Checks parameters that come from a model file before they reach RopeInvFreqs /
// RopeTable (which STET_CHECK them): rot_dim even and in [2, 65536], base finite and > 0,
// the scaling fields of `scaling.kind` finite and in range, every freq_factors[i]
// (rot_dim/2 of them, or nullptr) finite and > 0, and capacity positions within
// kRopeMaxAngle. InvalidArgument naming the offending value otherwise.
Status ValidateRope(int rot_dim, double base, const RopeScaling& scaling, const float* freq_factors,
                    int64_t capacity);

// rot_dim / 2 inverse frequencies: inv_i = base^(-2i / rot_dim), then the scaling, then
// divided by freq_factors[i] when given (GGUF tensor rope_freqs.weight; Llama 3.1+
// GGUFs ship their llama3 scaling this way, with scaling.kind = kNone).
std::vector<double> RopeInvFreqs(int rot_dim, double base, const RopeScaling& scaling);
std::vector<double> RopeInvFreqs(int rot_dim, double base, const RopeScaling& scaling,
                                 const float* freq_factors);

// The factor multiplied into cos and sin: attention_factor for YaRN, 1 otherwise.
double RopeAttentionFactor(const RopeScaling& scaling);

// cos/sin of angle = pos * inv_i (one double rounding), times RopeAttentionFactor, rounded
// once to float; for positions [0, capacity) computed up front (capacity * rot_dim / 2
// pairs), so lookups are plain loads and the table is immutable (thread-safe).
class RopeTable {
 public:
  // freq_factors: rot_dim / 2 values or nullptr. Parameters must pass ValidateRope.
  RopeTable(int rot_dim, double base, const RopeScaling& scaling, const float* freq_factors,
            int64_t capacity);

  int n_pairs() const { return n_pairs_; }
  int64_t capacity() const { return capacity_; }
  const std::vector<double>& inv_freqs() const { return inv_freqs_; }
  double attention_factor() const { return attention_factor_; }

  // n_pairs() values each; 0 <= pos < capacity().
  const float* Cos(int64_t pos) const;
  const float* Sin(int64_t pos) const;
  // The same values for any pos >= 0 (pos * max inv freq <= kRopeMaxAngle), not cached.
  void Compute(int64_t pos, float* cos_out, float* sin_out) const;

 private:
  int n_pairs_;
  int64_t capacity_;
  double attention_factor_;
  std::vector<double> inv_freqs_;
  std::vector<float> cos_;  // [capacity][n_pairs]
  std::vector<float> sin_;
};

}  // namespace stet
