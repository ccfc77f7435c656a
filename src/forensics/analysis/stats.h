// Statistics for the forensics reports: Wilson score intervals, seeded
// (reproducible) bootstrap intervals, exact binomial tests (sign test,
// McNemar), and distances between token distributions. Bootstrap draws come
// from counter-based Philox keyed by (seed, resample, position), so a report is
// a pure function of its data and seed.
#pragma once

#include <cstdint>
#include <vector>

namespace stet::forensics {

constexpr double kZ95 = 1.959963984540054;  // the standard normal's 97.5% quantile

struct Interval {
  double lo = 0;
  double hi = 0;
};

// Wilson score interval for k successes in n trials (n > 0). Unlike the Wald
// interval it stays inside [0, 1] and is not degenerate at k = 0 or k = n.
Interval WilsonInterval(int64_t k, int64_t n, double z = kZ95);

// Linear-interpolation quantile (Hyndman & Fan type 7, numpy's default) of
// already sorted values; q in [0, 1].
double QuantileSorted(const std::vector<double>& sorted, double q);

// Uniform index in [0, n) for draw `position` of resample `resample` (Philox).
uint64_t ResampleIndex(uint64_t seed, uint64_t resample, uint64_t position, uint64_t n);

// Percentile bootstrap interval for the mean of `values`: resample the values
// with replacement `resamples` times. With per-item rates as values this is the
// cluster bootstrap (items are the clusters; repeats stay with their item).
Interval BootstrapMeanCi(const std::vector<double>& values, int resamples, uint64_t seed,
                         double level = 0.95);

// Paired bootstrap for mean(b[i] - a[i]): items are resampled as pairs.
Interval PairedBootstrapCi(const std::vector<double>& a, const std::vector<double>& b,
                           int resamples, uint64_t seed, double level = 0.95);

// P(X <= k) for X ~ Binomial(n, p).
double BinomialCdf(int64_t k, int64_t n, double p);

// Exact two-sided sign test: of n_plus + n_minus non-tied pairs, n_plus went one
// way. p = min(1, 2 * P(X <= min(n_plus, n_minus))), X ~ Binomial(n, 1/2); 1 when n = 0.
double SignTestPValue(int64_t n_plus, int64_t n_minus);

// Exact McNemar test on the discordant pairs of a paired 2x2 table (b: pass in A
// only, c: pass in B only). The same binomial test as the sign test.
double McNemarExactPValue(int64_t b, int64_t c);

// Distances between two distributions over the same support (each sums to 1).
double TotalVariation(const std::vector<double>& p, const std::vector<double>& q);
// KL(p || q) in nats; +infinity where q is 0 and p is not.
double KlDivergence(const std::vector<double>& p, const std::vector<double>& q);

// Probabilities from logprobs, renormalized to sum to 1 (max-subtracted).
std::vector<double> RenormalizedFromLogprobs(const std::vector<double>& logprobs);

double Mean(const std::vector<double>& v);

}  // namespace stet::forensics
