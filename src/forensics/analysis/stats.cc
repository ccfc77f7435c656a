// Exact binomial tails are summed in the log domain (lgamma) so they stay
// accurate for thousands of trials; these numbers never feed logits, so libm is
// fine here.
#include "forensics/analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"
#include "base/rng.h"

namespace stet::forensics {

Interval WilsonInterval(int64_t k, int64_t n, double z) {
  STET_CHECK(n > 0 && k >= 0 && k <= n);
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(k) / nn;
  const double z2 = z * z;
  const double denom = 1.0 + z2 / nn;
  const double center = (p + z2 / (2.0 * nn)) / denom;
  const double half = z * std::sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn)) / denom;
  Interval r{center - half, center + half};
  // Exact ends: at k = 0 the lower bound is 0, at k = n the upper bound is 1
  // (the formula gives them up to rounding).
  if (k == 0) r.lo = 0.0;
  if (k == n) r.hi = 1.0;
  r.lo = std::max(0.0, r.lo);
  r.hi = std::min(1.0, r.hi);
  return r;
}

double QuantileSorted(const std::vector<double>& sorted, double q) {
  STET_CHECK(!sorted.empty());
  if (sorted.size() == 1) return sorted[0];
  q = std::clamp(q, 0.0, 1.0);
  const double h = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

uint64_t ResampleIndex(uint64_t seed, uint64_t resample, uint64_t position, uint64_t n) {
  const auto r =
      Philox4x32({static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32),
                  static_cast<uint32_t>(resample), static_cast<uint32_t>(resample >> 32)},
                 {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  const uint64_t x = (static_cast<uint64_t>(r[0]) << 32) | r[1];
  // Lemire's multiply-shift: bias below n / 2^64, far under anything a report shows.
  return static_cast<uint64_t>((static_cast<unsigned __int128>(x) * n) >> 64);
}

namespace {

Interval PercentileInterval(std::vector<double> stats, double level) {
  std::sort(stats.begin(), stats.end());
  const double alpha = (1.0 - level) / 2.0;
  return {QuantileSorted(stats, alpha), QuantileSorted(stats, 1.0 - alpha)};
}

}  // namespace

Interval BootstrapMeanCi(const std::vector<double>& values, int resamples, uint64_t seed,
                         double level) {
  STET_CHECK(!values.empty() && resamples > 0);
  const uint64_t n = values.size();
  std::vector<double> means(resamples);
  for (int b = 0; b < resamples; ++b) {
    double s = 0;
    for (uint64_t i = 0; i < n; ++i) s += values[ResampleIndex(seed, b, i, n)];
    means[b] = s / static_cast<double>(n);
  }
  return PercentileInterval(std::move(means), level);
}

Interval PairedBootstrapCi(const std::vector<double>& a, const std::vector<double>& b,
                           int resamples, uint64_t seed, double level) {
  STET_CHECK(a.size() == b.size() && !a.empty() && resamples > 0);
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = b[i] - a[i];
  return BootstrapMeanCi(d, resamples, seed, level);
}

double BinomialCdf(int64_t k, int64_t n, double p) {
  STET_CHECK(n >= 0);
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  if (p <= 0.0) return 1.0;
  if (p >= 1.0) return 0.0;
  const double lp = std::log(p), lq = std::log1p(-p);
  const double lnf = std::lgamma(static_cast<double>(n) + 1.0);
  std::vector<double> terms;
  terms.reserve(k + 1);
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i <= k; ++i) {
    const double t = lnf - std::lgamma(static_cast<double>(i) + 1.0) -
                     std::lgamma(static_cast<double>(n - i) + 1.0) + static_cast<double>(i) * lp +
                     static_cast<double>(n - i) * lq;
    terms.push_back(t);
    mx = std::max(mx, t);
  }
  double s = 0;
  for (double t : terms) s += std::exp(t - mx);
  return std::min(1.0, std::exp(mx) * s);
}

double SignTestPValue(int64_t n_plus, int64_t n_minus) {
  STET_CHECK(n_plus >= 0 && n_minus >= 0);
  const int64_t n = n_plus + n_minus;
  if (n == 0) return 1.0;
  return std::min(1.0, 2.0 * BinomialCdf(std::min(n_plus, n_minus), n, 0.5));
}

double McNemarExactPValue(int64_t b, int64_t c) { return SignTestPValue(b, c); }

double TotalVariation(const std::vector<double>& p, const std::vector<double>& q) {
  STET_CHECK(p.size() == q.size());
  double s = 0;
  for (size_t i = 0; i < p.size(); ++i) s += std::fabs(p[i] - q[i]);
  return 0.5 * s;
}

double KlDivergence(const std::vector<double>& p, const std::vector<double>& q) {
  STET_CHECK(p.size() == q.size());
  double s = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0) continue;
    if (q[i] <= 0) return std::numeric_limits<double>::infinity();
    s += p[i] * std::log(p[i] / q[i]);
  }
  return std::max(0.0, s);  // rounding can leave a tiny negative for equal inputs
}

std::vector<double> RenormalizedFromLogprobs(const std::vector<double>& logprobs) {
  std::vector<double> p(logprobs.size());
  if (logprobs.empty()) return p;
  const double mx = *std::max_element(logprobs.begin(), logprobs.end());
  double s = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] = std::exp(logprobs[i] - mx);
    s += p[i];
  }
  for (double& x : p) x /= s;
  return p;
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace stet::forensics
