#pragma once
// Statistics of timing samples: robust summaries, a distribution-free confidence
// interval for the median, and the adaptive stop rule of the measuring harnesses.
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace sextant::stats {

struct Summary {
  std::size_t n = 0;
  double min = 0, max = 0, mean = 0, median = 0;
  double ci_lo = 0, ci_hi = 0;  // confidence interval of the median (order statistics)
  double p5 = 0, p95 = 0, p99 = 0;
  double cv = 0;  // sample standard deviation / mean
};

// Quantile of sorted data, linear interpolation between order statistics
// (Hyndman & Fan type 7, numpy's default). q in [0, 1]; sorted must be non-empty.
double quantile_sorted(std::span<const double> sorted, double q);

// The median of data in any order (the mean of the middle two for an even count): the
// one implementation every module uses. Throws std::invalid_argument on empty data.
double median(std::vector<double> values);

// Distribution-free CI of the median: the order statistics x_(j), x_(k) (1-based ranks) with
// P(j <= B < k) >= confidence, B ~ Binomial(n, 1/2) (exact for every n). For n too
// small to reach the confidence, the interval is [min, max].
struct MedianInterval {
  double lo = 0, hi = 0;
  std::size_t lo_index = 0, hi_index = 0;  // 0-based indices into the sorted data
};
MedianInterval median_ci_sorted(std::span<const double> sorted, double confidence = 0.95);

// All statistics of a sample (need not be sorted). Empty input -> n == 0, rest 0.
Summary summarize(std::span<const double> samples, double confidence = 0.95);

// Adaptive repetitions: stop when the median's CI half-width is within
// rel_half_width of the median, or the time budget is spent, or the cap is hit.
enum class StopReason { precision, budget, iteration_cap };
std::string_view to_string(StopReason);

struct StopRule {
  double rel_half_width = 0.02;
  double budget_seconds = 1.0;
  std::size_t min_samples = 10;   // never judge precision on fewer samples
  std::size_t max_samples = 1000;
};

// half width = (ci_hi - ci_lo) / 2. Returns nothing while the harness should go on.
std::optional<StopReason> should_stop(const StopRule& rule, std::span<const double> samples,
                                      double elapsed_seconds);

}  // namespace sextant::stats
