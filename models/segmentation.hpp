#pragma once
// Segmented least squares: the one routine that splits an ordered series into runs,
// each described by a small model of its own (a Hockney line per message-size range,
// a bandwidth plateau per memory level), the number of runs chosen by the Bayesian
// information criterion so that protocol switches and cache levels are found from the
// data rather than told.
#include <cstddef>
#include <functional>
#include <vector>

namespace sextant::model {

// The cost of one run over points [i, j): the sum of squared residuals of the run's
// model fitted to them, or +infinity where no run may start at i or end at j (e.g. a
// boundary that would split repeated measurements of one size). Called only for runs of
// at least min_points points.
using RunCost = std::function<double(std::size_t i, std::size_t j)>;

struct SegmentationOptions {
  std::size_t min_points = 2;      // per run
  std::size_t max_runs = 12;
  std::size_t params_per_run = 2;  // the run model's parameters: a line 2, a plateau 1
  // Unknown noise: BIC = N ln(max(SSE/N, min_mean_square)) + p ln N, where the floor
  // keeps exact data from rewarding splits of rounding noise (ln of ~0 is hugely
  // negative), and a guard: more runs must also cut the mean square by
  // min_gain_per_run per run added, relative to the best segmentation accepted so far.
  // BIC charges one parameter per boundary, but the search tries every position, and
  // with short runs that buys more than one parameter's worth of fit: on pure noise an
  // extra run typically removes a third of the SSE or less, while a real switch or
  // cache level removes one to two orders of magnitude.
  double min_mean_square = 1e-12;
  double min_gain_per_run = 0.5;
  // Known noise (> 0: the variance of one residual): BIC = SSE / variance + p ln N, no
  // guard; residuals far above the noise are then structure and buy runs.
  double known_variance = 0;
};

struct Segmentation {
  std::vector<std::size_t> starts;  // run r is [starts[r], starts[r + 1]); back() == n
  double criterion = 0;             // BIC of the chosen segmentation
  std::size_t runs() const { return starts.size() - 1; }
};

// p in the criterion is (params_per_run + 1) k - 1 for k runs (their parameters and
// k - 1 boundaries). Ties go to fewer runs. Throws std::invalid_argument when n points
// admit no segmentation at all.
Segmentation segment_series(std::size_t n, const RunCost& cost, const SegmentationOptions& options);

}  // namespace sextant::model
