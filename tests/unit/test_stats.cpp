// Expected values are independent truth: numpy type-7 quantiles worked by hand, and
// median-CI ranks from published tables (Conover, Practical Nonparametric Statistics)
// cross-checked with exact binomial sums (Python math.comb / fractions).
#include "core/stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "tests/unit/portable_random.hpp"

namespace st = sextant::stats;

TEST(Quantile, Type7MatchesNumpy) {
  const std::vector<double> x{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(st::quantile_sorted(x, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(x, 0.05), 1.15);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(x, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(x, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(x, 0.95), 3.85);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(x, 0.99), 3.97);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(x, 1.0), 4.0);
  // numpy.quantile([1,1,3,4,5], [0.1,0.3,0.5,0.9]) -> [1.0, 1.4, 3.0, 4.6]
  const std::vector<double> y{1, 1, 3, 4, 5};
  EXPECT_DOUBLE_EQ(st::quantile_sorted(y, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(y, 0.3), 1.4);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(y, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(y, 0.9), 4.6);
}

TEST(Quantile, SingleAndEmpty) {
  const std::vector<double> one{7.0};
  EXPECT_DOUBLE_EQ(st::quantile_sorted(one, 0.0), 7.0);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(one, 0.5), 7.0);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(one, 1.0), 7.0);
  EXPECT_THROW(st::quantile_sorted(std::span<const double>{}, 0.5), std::invalid_argument);
}

namespace {
std::vector<double> iota_data(std::size_t n) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), 1.0);  // value == 1-based rank
  return v;
}
}  // namespace

TEST(MedianCI, TableRanks) {
  // n=10, 95%: ranks 2 and 9 (coverage 1 - 2*11/1024 = 0.9785).
  auto ci = st::median_ci_sorted(iota_data(10), 0.95);
  EXPECT_EQ(ci.lo_index, 1u);
  EXPECT_EQ(ci.hi_index, 8u);
  EXPECT_DOUBLE_EQ(ci.lo, 2.0);
  EXPECT_DOUBLE_EQ(ci.hi, 9.0);
  // n=10, 99%: ranks 1 and 10 (0.9980).
  ci = st::median_ci_sorted(iota_data(10), 0.99);
  EXPECT_EQ(ci.lo_index, 0u);
  EXPECT_EQ(ci.hi_index, 9u);
  // n=100, 95%: ranks 40 and 61 (0.9648); 99%: ranks 37 and 64 (0.9934).
  ci = st::median_ci_sorted(iota_data(100), 0.95);
  EXPECT_DOUBLE_EQ(ci.lo, 40.0);
  EXPECT_DOUBLE_EQ(ci.hi, 61.0);
  ci = st::median_ci_sorted(iota_data(100), 0.99);
  EXPECT_DOUBLE_EQ(ci.lo, 37.0);
  EXPECT_DOUBLE_EQ(ci.hi, 64.0);
  // Other exact values: n=6 -> ranks 1,6 (0.96875); n=9 -> 2,8; n=20 -> 6,15;
  // n=50 -> 18,33; n=1000 -> 469,532.
  ci = st::median_ci_sorted(iota_data(6), 0.95);
  EXPECT_DOUBLE_EQ(ci.lo, 1.0);
  EXPECT_DOUBLE_EQ(ci.hi, 6.0);
  ci = st::median_ci_sorted(iota_data(9), 0.95);
  EXPECT_DOUBLE_EQ(ci.lo, 2.0);
  EXPECT_DOUBLE_EQ(ci.hi, 8.0);
  ci = st::median_ci_sorted(iota_data(20), 0.95);
  EXPECT_DOUBLE_EQ(ci.lo, 6.0);
  EXPECT_DOUBLE_EQ(ci.hi, 15.0);
  ci = st::median_ci_sorted(iota_data(50), 0.95);
  EXPECT_DOUBLE_EQ(ci.lo, 18.0);
  EXPECT_DOUBLE_EQ(ci.hi, 33.0);
  ci = st::median_ci_sorted(iota_data(1000), 0.95);
  EXPECT_DOUBLE_EQ(ci.lo, 469.0);
  EXPECT_DOUBLE_EQ(ci.hi, 532.0);
}

TEST(MedianCI, TinyNFallsBackToMinMax) {
  for (std::size_t n : {1u, 2u, 5u}) {  // 1 - 2^(1-n) < 0.95 for n <= 5
    const auto ci = st::median_ci_sorted(iota_data(n), 0.95);
    EXPECT_EQ(ci.lo_index, 0u) << n;
    EXPECT_EQ(ci.hi_index, n - 1) << n;
    EXPECT_DOUBLE_EQ(ci.lo, 1.0);
    EXPECT_DOUBLE_EQ(ci.hi, static_cast<double>(n));
  }
}

TEST(MedianCI, LargeNNoOverflow) {
  // n = 1e6: normal approximation with continuity correction gives rank
  // n/2 + 0.5 - 1.95996 * sqrt(n)/2 = 499020.5 -> 499020; allow +-2 for the approximation.
  const std::size_t n = 1'000'000;
  const auto ci = st::median_ci_sorted(iota_data(n), 0.95);
  EXPECT_NEAR(static_cast<double>(ci.lo_index + 1), 499020.0, 2.0);
  EXPECT_EQ(ci.hi_index, n - 1 - ci.lo_index);  // symmetric
}

TEST(MedianCI, MonteCarloCoverage) {
  // Exponential(1) has median ln 2; the exact coverage at n=50 is 0.9672.
  sextant::testing::Random rng(12345);
  const double true_median = std::log(2.0);
  const int trials = 2000;
  int covered = 0;
  std::vector<double> x(50);
  for (int t = 0; t < trials; ++t) {
    for (double& v : x) v = rng.exponential(1.0);
    std::sort(x.begin(), x.end());
    const auto ci = st::median_ci_sorted(x, 0.95);
    covered += (ci.lo <= true_median && true_median <= ci.hi);
  }
  const double coverage = static_cast<double>(covered) / trials;
  EXPECT_GE(coverage, 0.93);
  EXPECT_LE(coverage, 0.99);
}

TEST(Summarize, KnownVector) {
  // 1..100 in scrambled order: summarize must sort.
  auto x = iota_data(100);
  sextant::testing::Random(7).shuffle(x);
  const auto s = st::summarize(x);
  EXPECT_EQ(s.n, 100u);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 100.0);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.median, 50.5);
  EXPECT_DOUBLE_EQ(s.ci_lo, 40.0);
  EXPECT_DOUBLE_EQ(s.ci_hi, 61.0);
  EXPECT_NEAR(s.p5, 5.95, 1e-12);
  EXPECT_NEAR(s.p95, 95.05, 1e-12);
  EXPECT_NEAR(s.p99, 99.01, 1e-12);
  // sample std = sqrt(n(n+1)/12) = 29.011491975882016
  EXPECT_NEAR(s.cv, 29.011491975882016 / 50.5, 1e-12);
}

TEST(Summarize, EdgeCases) {
  EXPECT_EQ(st::summarize(std::span<const double>{}).n, 0u);
  const std::vector<double> one{3.0};
  auto s = st::summarize(one);
  EXPECT_EQ(s.n, 1u);
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.ci_lo, 3.0);
  EXPECT_DOUBLE_EQ(s.ci_hi, 3.0);
  EXPECT_DOUBLE_EQ(s.cv, 0.0);
  const std::vector<double> zero_mean{-1.0, 1.0};
  EXPECT_DOUBLE_EQ(st::summarize(zero_mean).cv, 0.0);
}

TEST(StopRule, Names) {
  EXPECT_EQ(st::to_string(st::StopReason::precision), "precision");
  EXPECT_EQ(st::to_string(st::StopReason::budget), "budget");
  EXPECT_EQ(st::to_string(st::StopReason::iteration_cap), "iteration_cap");
}

TEST(StopRule, TightSampleStopsForPrecisionAtMinSamples) {
  st::StopRule rule;  // 2 %, 1 s, min 10, max 1000
  sextant::testing::Random rng(1);
  std::vector<double> x;
  for (std::size_t i = 0; i < rule.min_samples; ++i) {
    EXPECT_FALSE(st::should_stop(rule, x, 0.0).has_value()) << "n=" << x.size();
    x.push_back(1.0 + rng.uniform(-1e-4, 1e-4));
  }
  EXPECT_EQ(st::should_stop(rule, x, 0.0), st::StopReason::precision);
  // Precision wins even when cap and budget are also reached.
  rule.max_samples = x.size();
  EXPECT_EQ(st::should_stop(rule, x, 10.0), st::StopReason::precision);
}

TEST(StopRule, WideSampleStopsOnlyForBudget) {
  st::StopRule rule;
  sextant::testing::Random rng(2);
  std::vector<double> x(200);
  for (double& v : x) v = rng.uniform(0.0, 100.0);
  // The CI half-width (~7) is far above 2 % of the median (~1).
  EXPECT_FALSE(st::should_stop(rule, x, 0.5).has_value());
  EXPECT_EQ(st::should_stop(rule, x, 1.0), st::StopReason::budget);
  EXPECT_EQ(st::should_stop(rule, x, 5.0), st::StopReason::budget);
}

TEST(StopRule, CapStopsWithIterationCap) {
  st::StopRule rule;
  rule.max_samples = 50;
  sextant::testing::Random rng(3);
  std::vector<double> x(49);
  for (double& v : x) v = rng.uniform(0.0, 100.0);
  EXPECT_FALSE(st::should_stop(rule, x, 0.0).has_value());
  x.push_back(rng.uniform(0.0, 100.0));
  EXPECT_EQ(st::should_stop(rule, x, 0.0), st::StopReason::iteration_cap);
  EXPECT_EQ(st::should_stop(rule, x, 99.0), st::StopReason::iteration_cap);  // cap before budget
}

TEST(StopRule, NeverPrecisionBelowMinSamples) {
  st::StopRule rule;
  rule.min_samples = 20;
  const std::vector<double> identical(19, 1.0);  // zero spread, yet too few samples
  EXPECT_FALSE(st::should_stop(rule, identical, 0.0).has_value());
  EXPECT_EQ(st::should_stop(rule, identical, 2.0), st::StopReason::budget);
  rule.max_samples = 19;
  EXPECT_EQ(st::should_stop(rule, identical, 0.0), st::StopReason::iteration_cap);
}
