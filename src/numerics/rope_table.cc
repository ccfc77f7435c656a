// RoPE frequencies and tables in double, no libm (see rope_table.h). The scaling
// formulas follow Hugging Face transformers' modeling_rope_utils (linear, llama3, yarn),
// evaluated in double instead of float32; the only rounding to float is the last step.
#include "numerics/rope_table.h"

#include <cmath>
#include <string>

#include "base/check.h"
#include "numerics/math.h"

namespace stet {
namespace {

constexpr double kTwoPi = 0x1.921fb54442d18p+2;

bool Finite(double x) { return x - x == 0.0; }

// floor / ceil for |x| < 2^52 (all we need: correction dims are below rot_dim).
double FloorD(double x) {
  const double t = static_cast<double>(static_cast<int64_t>(x));
  return t > x ? t - 1.0 : t;
}
double CeilD(double x) {
  const double t = static_cast<double>(static_cast<int64_t>(x));
  return t < x ? t + 1.0 : t;
}

std::string Num(double x) { return std::to_string(x); }

Status CheckPositive(const char* name, double v) {
  if (!Finite(v) || !(v > 0.0)) {
    return InvalidArgument(std::string("rope scaling ") + name + " must be finite and > 0, got " +
                           Num(v));
  }
  return Status::Ok();
}

// YaRN: the rotary dimension at which a frequency makes `rotations` full turns over
// the original context (HF's find_correction_dim).
double YarnCorrectionDim(double rotations, int dim, double base, double orig_ctx) {
  return dim * LogD(orig_ctx / (rotations * kTwoPi)) / (2.0 * LogD(base));
}

void ApplyScaling(const RopeScaling& s, int rot_dim, double base, std::vector<double>& inv) {
  const int half = rot_dim / 2;
  switch (s.kind) {
    case RopeScaling::Kind::kNone:
      return;
    case RopeScaling::Kind::kLinear:
      for (double& f : inv) f = f / s.factor;
      return;
    case RopeScaling::Kind::kLlama3: {
      // Wavelengths shorter than orig/high_freq_factor keep their frequency, longer than
      // orig/low_freq_factor are divided by factor, and in between blend linearly in
      // orig/wavelen.
      const double orig = s.original_max_position_embeddings;
      const double low_wavelen = orig / s.low_freq_factor;
      const double high_wavelen = orig / s.high_freq_factor;
      for (double& f : inv) {
        const double wavelen = kTwoPi / f;
        if (wavelen < high_wavelen) continue;
        if (wavelen > low_wavelen) {
          f = f / s.factor;
          continue;
        }
        const double smooth =
            (orig / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1.0 - smooth) * f / s.factor + smooth * f;
      }
      return;
    }
    case RopeScaling::Kind::kYarn: {
      // Frequencies below dim `low` extrapolate (unchanged), above `high` interpolate
      // (divided by factor), with a linear ramp between (HF truncate=True).
      const double orig = s.original_max_position_embeddings;
      double low = FloorD(YarnCorrectionDim(s.beta_fast, rot_dim, base, orig));
      double high = CeilD(YarnCorrectionDim(s.beta_slow, rot_dim, base, orig));
      if (low < 0.0) low = 0.0;
      if (high > rot_dim - 1) high = rot_dim - 1;
      if (low == high) high += 0.001;
      for (int i = 0; i < half; ++i) {
        double ramp = (i - low) / (high - low);
        ramp = ramp < 0.0 ? 0.0 : (ramp > 1.0 ? 1.0 : ramp);
        const double extrapolation = 1.0 - ramp;
        inv[i] = inv[i] / s.factor * (1.0 - extrapolation) + inv[i] * extrapolation;
      }
      return;
    }
  }
}

}  // namespace

Status ValidateRope(int rot_dim, double base, const RopeScaling& scaling, const float* freq_factors,
                    int64_t capacity) {
  if (rot_dim < 2 || rot_dim > 65536 || rot_dim % 2 != 0) {
    return InvalidArgument("rope dimension must be even and in [2, 65536], got " +
                           std::to_string(rot_dim));
  }
  if (!Finite(base) || !(base > 0.0)) {
    return InvalidArgument("rope base must be finite and > 0, got " + Num(base));
  }
  if (capacity < 0) return InvalidArgument("rope table capacity must be >= 0");
  using Kind = RopeScaling::Kind;
  const Kind kind = scaling.kind;
  if (kind != Kind::kNone && kind != Kind::kLinear && kind != Kind::kLlama3 &&
      kind != Kind::kYarn) {
    return InvalidArgument("unknown rope scaling kind " + std::to_string(static_cast<int>(kind)));
  }
  if (kind != Kind::kNone) STET_RETURN_IF_ERROR(CheckPositive("factor", scaling.factor));
  if (kind == Kind::kLlama3 || kind == Kind::kYarn) {
    STET_RETURN_IF_ERROR(CheckPositive("original_max_position_embeddings",
                                       scaling.original_max_position_embeddings));
  }
  if (kind == Kind::kLlama3) {
    STET_RETURN_IF_ERROR(CheckPositive("low_freq_factor", scaling.low_freq_factor));
    STET_RETURN_IF_ERROR(CheckPositive("high_freq_factor", scaling.high_freq_factor));
    if (!(scaling.high_freq_factor > scaling.low_freq_factor)) {
      return InvalidArgument("rope scaling llama3 needs high_freq_factor > low_freq_factor, got " +
                             Num(scaling.high_freq_factor) + " and " +
                             Num(scaling.low_freq_factor));
    }
  }
  if (kind == Kind::kYarn) {
    STET_RETURN_IF_ERROR(CheckPositive("beta_fast", scaling.beta_fast));
    STET_RETURN_IF_ERROR(CheckPositive("beta_slow", scaling.beta_slow));
    if (!Finite(scaling.attention_factor) || scaling.attention_factor < 0.0) {
      return InvalidArgument("rope scaling attention_factor must be finite and >= 0, got " +
                             Num(scaling.attention_factor));
    }
    if (base == 1.0) return InvalidArgument("rope scaling yarn needs base != 1");
  }
  if (freq_factors) {
    for (int i = 0; i < rot_dim / 2; ++i) {
      if (!Finite(freq_factors[i]) || !(freq_factors[i] > 0.0f)) {
        return InvalidArgument("rope_freqs[" + std::to_string(i) +
                               "] must be finite and > 0, got " + Num(freq_factors[i]));
      }
    }
  }
  const std::vector<double> inv = RopeInvFreqs(rot_dim, base, scaling, freq_factors);
  for (int i = 0; i < rot_dim / 2; ++i) {
    if (!Finite(inv[i]) || !(inv[i] >= 0.0)) {
      return InvalidArgument("rope inverse frequency " + std::to_string(i) + " is " + Num(inv[i]) +
                             " (base " + Num(base) + ")");
    }
    if (capacity > 0 && static_cast<double>(capacity - 1) * inv[i] > kRopeMaxAngle) {
      return InvalidArgument("rope angle for position " + std::to_string(capacity - 1) +
                             " exceeds " + Num(kRopeMaxAngle) + " (inverse frequency " +
                             Num(inv[i]) + ")");
    }
  }
  return Status::Ok();
}

std::vector<double> RopeInvFreqs(int rot_dim, double base, const RopeScaling& scaling) {
  return RopeInvFreqs(rot_dim, base, scaling, nullptr);
}

std::vector<double> RopeInvFreqs(int rot_dim, double base, const RopeScaling& scaling,
                                 const float* freq_factors) {
  STET_CHECK(rot_dim >= 2 && rot_dim % 2 == 0);
  STET_CHECK(base > 0.0);
  const int half = rot_dim / 2;
  std::vector<double> inv(half);
  // base^e with e = -2i/rot_dim = e_hi + e_lo exactly: base^e_hi (1 + e_lo ln base), so
  // the rounding of the exponent does not cost |e ln base| * 2^-53 (up to ~8 ulp).
  const double log_base = LogD(base);
  for (int i = 0; i < half; ++i) {
    const double num = -2.0 * i;
    const double e_hi = num / rot_dim;
    const double e_lo = std::fma(-e_hi, static_cast<double>(rot_dim), num) / rot_dim;
    const double p = PowD(base, e_hi);
    inv[i] = std::fma(p, e_lo * log_base, p);
  }
  ApplyScaling(scaling, rot_dim, base, inv);
  if (freq_factors) {
    for (int i = 0; i < half; ++i) inv[i] = inv[i] / static_cast<double>(freq_factors[i]);
  }
  return inv;
}

double RopeAttentionFactor(const RopeScaling& scaling) {
  if (scaling.kind != RopeScaling::Kind::kYarn) return 1.0;
  if (scaling.attention_factor > 0.0) return scaling.attention_factor;
  if (scaling.factor <= 1.0) return 1.0;
  return 0.1 * LogD(scaling.factor) + 1.0;
}

RopeTable::RopeTable(int rot_dim, double base, const RopeScaling& scaling,
                     const float* freq_factors, int64_t capacity)
    : n_pairs_(rot_dim / 2),
      capacity_(capacity),
      attention_factor_(RopeAttentionFactor(scaling)),
      inv_freqs_(RopeInvFreqs(rot_dim, base, scaling, freq_factors)) {
  STET_CHECK(capacity >= 0);
  const size_t n = static_cast<size_t>(capacity) * static_cast<size_t>(n_pairs_);
  cos_.resize(n);
  sin_.resize(n);
  for (int64_t p = 0; p < capacity; ++p) {
    Compute(p, &cos_[static_cast<size_t>(p) * n_pairs_], &sin_[static_cast<size_t>(p) * n_pairs_]);
  }
}

const float* RopeTable::Cos(int64_t pos) const {
  STET_CHECK(pos >= 0 && pos < capacity_);
  return &cos_[static_cast<size_t>(pos) * n_pairs_];
}

const float* RopeTable::Sin(int64_t pos) const {
  STET_CHECK(pos >= 0 && pos < capacity_);
  return &sin_[static_cast<size_t>(pos) * n_pairs_];
}

void RopeTable::Compute(int64_t pos, float* cos_out, float* sin_out) const {
  STET_CHECK(pos >= 0);
  const double p = static_cast<double>(pos);
  for (int i = 0; i < n_pairs_; ++i) {
    const double angle = p * inv_freqs_[i];
    STET_CHECK_MSG(angle <= kRopeMaxAngle, "rope angle outside SinCosD's range");
    double s, c;
    SinCosD(angle, &s, &c);
    if (attention_factor_ != 1.0) {
      s *= attention_factor_;
      c *= attention_factor_;
    }
    cos_out[i] = static_cast<float>(c);
    sin_out[i] = static_cast<float>(s);
  }
}

}  // namespace stet
