#include "models/segmentation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace sextant::model {

Segmentation segment_series(std::size_t n, const RunCost& cost, const SegmentationOptions& options) {
  if (options.max_runs < 1) throw std::invalid_argument("segmentation: max_runs must be at least 1");
  if (options.min_points < 1) throw std::invalid_argument("segmentation: min_points must be at least 1");
  const std::size_t m = options.min_points;
  constexpr double kInf = std::numeric_limits<double>::infinity();

  // cost of every admissible run, once: O(n^2) calls, nothing for the ~30 points of a
  // sweep and fine up to a few hundred.
  std::vector<std::vector<double>> run(n + 1, std::vector<double>(n + 1, kInf));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + m; j <= n; ++j) run[i][j] = cost(i, j);

  // best[k][j]: the least total cost of points [0, j) in exactly k runs; from[k][j]:
  // where the last of them starts.
  const std::size_t k_max = std::min(options.max_runs, n / m);
  std::vector<std::vector<double>> best(k_max + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<std::size_t>> from(k_max + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t k = 1; k <= k_max; ++k)
    for (std::size_t j = k * m; j <= n; ++j)
      for (std::size_t i = (k - 1) * m; i + m <= j; ++i) {
        const double c = best[k - 1][i] + run[i][j];
        if (c < best[k][j]) {
          best[k][j] = c;
          from[k][j] = i;
        }
      }

  const double dn = static_cast<double>(n);
  const auto params = [&](std::size_t k) { return static_cast<double>((options.params_per_run + 1) * k - 1); };
  std::size_t k_best = 0;
  double bic_best = kInf, mse_best = kInf;
  for (std::size_t k = 1; k <= k_max; ++k) {
    if (!std::isfinite(best[k][n])) continue;  // no admissible partition into k runs
    if (options.known_variance > 0) {
      const double bic = best[k][n] / options.known_variance + params(k) * std::log(dn);
      if (k_best == 0 || bic < bic_best) k_best = k, bic_best = bic;
      continue;
    }
    const double mse = std::max(best[k][n] / dn, options.min_mean_square);
    const double bic = dn * std::log(mse) + params(k) * std::log(dn);
    const bool pays = mse <= std::pow(options.min_gain_per_run, static_cast<double>(k - k_best)) * mse_best;
    if (k_best == 0 || (bic < bic_best && pays)) k_best = k, bic_best = bic, mse_best = mse;
  }
  if (k_best == 0) throw std::invalid_argument("segmentation: no admissible segmentation of " + std::to_string(n) + " points");

  Segmentation s;
  s.criterion = bic_best;
  s.starts.assign(k_best + 1, n);
  for (std::size_t k = k_best, j = n; k >= 1; --k) j = s.starts[k - 1] = from[k][j];
  return s;
}

}  // namespace sextant::model
