#pragma once
// Piecewise Hockney model T(n) = alpha + beta * n, fitted by segmented least
// squares on relative error with the number of segments chosen by an information
// criterion, so that protocol switches (eager -> rendezvous) and cache effects are
// found from the data rather than told.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sextant::model {

struct Point {
  double bytes = 0;
  double seconds = 0;    // a robust per-size estimate, typically the median
  double rel_sigma = 0;  // its relative standard error, from its CI; 0 = unknown
};

struct Interval {
  double lo = 0, hi = 0;
};

struct Segment {
  double lo_bytes = 0, hi_bytes = 0;  // data range the segment was fitted on (inclusive)
  double alpha = 0;                   // seconds
  double beta = 0;                    // seconds per byte
  Interval alpha_ci, beta_ci;         // 95% bootstrap percentile intervals
  double r2 = 0;                      // coefficient of determination (weighted)
  double rms_rel_residual = 0;        // sqrt(mean(((t - fit)/t)^2))
  std::size_t points = 0;
};

struct FitOptions {
  // Two sizes per segment are allowed: on shared memory the time bends over a factor
  // 2-4 in size as messages move from one cache level to the next, and only short
  // segments follow it; the criterion in fit_piecewise decides whether they pay.
  std::size_t max_segments = 12;
  std::size_t min_points_per_segment = 2;
  std::size_t bootstrap_resamples = 200;
  std::uint64_t seed = 12345;
  // Relative scatter of single sizes about any smooth curve (alignment, cache sets)
  // that segments should not chase; added to the points' own standard errors in the
  // known-noise criterion (fit_piecewise).
  double scatter_floor = 0.02;
  // Points a fit needs at least: one segment's, and never fewer than 3 (a line through
  // two says nothing of how well it fits).
  std::size_t min_points() const { return std::max<std::size_t>(min_points_per_segment, 3); }
};

struct PiecewiseFit {
  std::vector<Segment> segments;  // ordered by lo_bytes, non-overlapping
  double criterion = 0;           // BIC of the chosen segmentation
};

// Fit a single Hockney line (weighted by 1/t^2, alpha constrained >= 0).
Segment fit_segment(std::span<const Point> points);

// Points need not be sorted; throws std::invalid_argument when fewer than
// min_points_per_segment points are given or a time is not positive.
PiecewiseFit fit_piecewise(std::span<const Point> points, const FitOptions& options = {});

// Segment that covers bytes: the one whose range contains it, else the nearest
// (first below the range, last above it).
const Segment& segment_for(const PiecewiseFit& fit, double bytes);

// The time for `bytes` as its alpha and beta parts. Inside a segment's range, or beyond
// the fitted range: that segment's line. In the gap between two fitted ranges (a switch
// lies somewhere in it, or the time bends there from one cache level's slope to the
// next): interpolated between the two segments' ends, geometrically in size and time,
// as sizes are swept geometrically; the alpha part is then the interpolated alpha.
// Predicting the gap with the nearer line missed held-out sizes there by 50-95% on
// shared memory (a 0.04 -> 0.1 ns/B bend from L2 to L3 between 0.6 and 1.2 MB).
struct PiecewiseTerms {
  double alpha_part = 0, beta_part = 0;
  std::size_t segment = 0;  // the segment used; in a gap, the nearer one on a log scale
  bool bridged = false;             // in a gap: interpolated between `left` and `right`
  std::size_t left = 0, right = 0;  // in a gap: the segments on either side
  double seconds() const { return alpha_part + beta_part; }
};
PiecewiseTerms predict_terms(const PiecewiseFit& fit, double bytes);
double predict(const PiecewiseFit& fit, double bytes);

}  // namespace sextant::model
