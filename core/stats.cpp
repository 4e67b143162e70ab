#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace sextant::stats {

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("quantile_sorted: empty data");
  q = std::clamp(q, 0.0, 1.0);
  // Type 7: h = (n-1) q, interpolate between x[floor(h)] and the next one.
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(h);
  if (lo + 1 >= sorted.size()) return sorted.back();
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[lo + 1] - sorted[lo]);
}

double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median: empty data");
  std::sort(values.begin(), values.end());
  return quantile_sorted(values, 0.5);
}

// Convention: B = number of observations below the true median, B ~ Bin(n, 1/2).
// With 1-based ranks, [x_(r), x_(n-r+1)] covers the median iff r <= B <= n-r, so
//   coverage(r) = 1 - 2 P(B <= r-1)
// (the header's P(j <= B < k) with j = r, k = n-r+1). coverage falls as r grows, so
// we take the largest r with coverage >= confidence; 0-based indices are r-1, n-r.
MedianInterval median_ci_sorted(std::span<const double> sorted, double confidence) {
  const std::size_t n = sorted.size();
  if (n == 0) return {};
  const MedianInterval whole{sorted.front(), sorted.back(), 0, n - 1};
  if (!(confidence < 1.0)) return whole;  // only the full range is "certain"

  const double tail = (1.0 - confidence) / 2.0;  // allowed P(B <= r-1)
  const double dn = static_cast<double>(n);
  const double log_norm = std::lgamma(dn + 1.0) - dn * std::numbers::ln2;
  // Terms more than ~40 sigma (sigma = sqrt(n)/2) below n/2 are below e^-800 relative
  // to the mode: skipping them keeps the cost O(sqrt n) for n ~ 1e6 at no accuracy cost.
  const double skip = std::floor(dn / 2.0 - 20.0 * std::sqrt(dn));
  const std::size_t i0 = skip > 0 ? static_cast<std::size_t>(skip) : 0;

  std::size_t best_r = i0;  // every r <= i0 has P(B <= r-1) ~ 0
  double cdf = 0.0;
  // Tolerance so that a table coverage hit exactly is not lost to rounding.
  const double tol = 1e-12;
  for (std::size_t i = i0; 2 * (i + 1) <= n + 1; ++i) {  // keep r = i+1 <= n-r+1
    const double di = static_cast<double>(i);
    cdf += std::exp(log_norm - std::lgamma(di + 1.0) - std::lgamma(dn - di + 1.0));
    if (cdf > tail + tol) break;
    best_r = i + 1;
  }
  if (best_r == 0) return whole;  // n too small to reach the confidence
  const std::size_t lo = best_r - 1, hi = n - best_r;
  return {sorted[lo], sorted[hi], lo, hi};
}

Summary summarize(std::span<const double> samples, double confidence) {
  Summary s;
  s.n = samples.size();
  if (s.n == 0) return s;
  std::vector<double> x(samples.begin(), samples.end());
  std::sort(x.begin(), x.end());

  s.min = x.front();
  s.max = x.back();
  double sum = 0;
  for (double v : x) sum += v;
  s.mean = sum / static_cast<double>(s.n);
  s.median = quantile_sorted(x, 0.5);
  const auto ci = median_ci_sorted(x, confidence);
  s.ci_lo = ci.lo;
  s.ci_hi = ci.hi;
  s.p5 = quantile_sorted(x, 0.05);
  s.p95 = quantile_sorted(x, 0.95);
  s.p99 = quantile_sorted(x, 0.99);
  if (s.n >= 2 && s.mean != 0) {
    // Two-pass variance: timings share a large offset, the one-pass formula cancels.
    double ss = 0;
    for (double v : x) ss += (v - s.mean) * (v - s.mean);
    s.cv = std::sqrt(ss / static_cast<double>(s.n - 1)) / s.mean;
  }
  return s;
}

std::string_view to_string(StopReason r) {
  switch (r) {
    case StopReason::precision: return "precision";
    case StopReason::budget: return "budget";
    case StopReason::iteration_cap: return "iteration_cap";
  }
  return "unknown";
}

// Order of checks: precision, then iteration cap, then budget. When several hold at
// once, "precision" is the most informative answer (the result is good, not merely cut
// off), and the cap is deterministic while the budget depends on machine speed.
std::optional<StopReason> should_stop(const StopRule& rule, std::span<const double> samples,
                                      double elapsed_seconds) {
  if (samples.size() >= rule.min_samples && !samples.empty()) {
    const Summary s = summarize(samples);
    if ((s.ci_hi - s.ci_lo) / 2.0 <= rule.rel_half_width * std::abs(s.median))
      return StopReason::precision;
  }
  if (samples.size() >= rule.max_samples) return StopReason::iteration_cap;
  if (elapsed_seconds >= rule.budget_seconds) return StopReason::budget;
  return std::nullopt;
}

}  // namespace sextant::stats
