#include "models/hockney.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/segmentation.hpp"

namespace sextant::model {
namespace {

// Times span five decades (1 us .. 10 ms), so we fit relative error: every
// residual is (t - fit) / t, i.e. weighted least squares with weights 1/t^2.
// Otherwise the largest messages would dominate and alpha would be noise.
struct LineFit {
  double alpha = 0;
  double beta = 0;
  double sse = 0;  // sum of squared relative residuals
};

double weighted_sse(std::span<const Point> pts, double alpha, double beta) {
  double sse = 0;
  for (const Point& p : pts) {
    const double r = (p.seconds - (alpha + beta * p.bytes)) / p.seconds;
    sse += r * r;
  }
  return sse;
}

void validate_points(std::span<const Point> pts, const char* who) {
  if (pts.empty()) throw std::invalid_argument(std::string(who) + ": no points given");
  for (const Point& p : pts) {
    if (!(std::isfinite(p.seconds) && p.seconds > 0)) {
      std::ostringstream msg;
      msg << who << ": time must be positive and finite, got " << p.seconds << " s at "
          << p.bytes << " bytes";
      throw std::invalid_argument(msg.str());
    }
    if (!(std::isfinite(p.bytes) && p.bytes >= 0)) {
      std::ostringstream msg;
      msg << who << ": message size must be non-negative and finite, got " << p.bytes;
      throw std::invalid_argument(msg.str());
    }
  }
}

// Weighted least squares for t = alpha + beta n with alpha, beta >= 0.
// Precondition: pts non-empty, all times positive (validated by callers).
LineFit fit_line(std::span<const Point> pts) {
  double sw = 0, swn = 0, swt = 0;
  double n_min = pts.front().bytes, n_max = pts.front().bytes;
  for (const Point& p : pts) {
    const double w = 1.0 / (p.seconds * p.seconds);
    sw += w;
    swn += w * p.bytes;
    swt += w * p.seconds;
    n_min = std::min(n_min, p.bytes);
    n_max = std::max(n_max, p.bytes);
  }
  const double n_bar = swn / sw;
  const double t_bar = swt / sw;

  // beta = 0 fit: the weighted mean time. Always feasible since t > 0.
  const LineFit flat{t_bar, 0.0, weighted_sse(pts, t_bar, 0.0)};
  if (n_min == n_max) return flat;  // one distinct size: the slope is not identifiable

  // Centred normal equations: sizes reach 6.7e7 and weights 1e12, so the raw
  // sum-of-products form would lose most digits to cancellation.
  double sxx = 0, sxy = 0;
  for (const Point& p : pts) {
    const double w = 1.0 / (p.seconds * p.seconds);
    const double dn = p.bytes - n_bar;
    sxx += w * dn * dn;
    sxy += w * dn * (p.seconds - t_bar);
  }
  const double beta = sxy / sxx;
  const double alpha = t_bar - beta * n_bar;
  if (alpha >= 0 && beta >= 0) return {alpha, beta, weighted_sse(pts, alpha, beta)};

  // The problem is a convex quadratic on the quadrant, so when the free optimum is
  // outside it the constrained optimum lies on one of the two edges. Each edge fit
  // is automatically feasible (t > 0, n >= 0); take whichever fits better. This
  // covers both "refit with beta = 0" and "refit with alpha = 0".
  double swnt = 0, swnn = 0;
  for (const Point& p : pts) {
    const double w = 1.0 / (p.seconds * p.seconds);
    swnt += w * p.bytes * p.seconds;
    swnn += w * p.bytes * p.bytes;
  }
  const double beta0 = swnt / swnn;  // swnn > 0: sizes differ, so some n > 0
  const LineFit through_origin{0.0, beta0, weighted_sse(pts, 0.0, beta0)};
  return through_origin.sse < flat.sse ? through_origin : flat;
}

// Fill everything a Segment reports about a fit on pts (CIs collapse to the estimate).
Segment describe(std::span<const Point> pts, const LineFit& f) {
  Segment s;
  s.alpha = f.alpha;
  s.beta = f.beta;
  s.alpha_ci = {f.alpha, f.alpha};
  s.beta_ci = {f.beta, f.beta};
  s.points = pts.size();
  s.lo_bytes = pts.front().bytes;
  s.hi_bytes = pts.front().bytes;
  double sw = 0, swt = 0;
  for (const Point& p : pts) {
    s.lo_bytes = std::min(s.lo_bytes, p.bytes);
    s.hi_bytes = std::max(s.hi_bytes, p.bytes);
    const double w = 1.0 / (p.seconds * p.seconds);
    sw += w;
    swt += w * p.seconds;
  }
  // Weighted R^2 = 1 - SSE/SST, with the same 1/t^2 weights and the weighted mean.
  const double t_bar = swt / sw;
  double sst = 0;
  for (const Point& p : pts) {
    const double r = (p.seconds - t_bar) / p.seconds;
    sst += r * r;
  }
  // The flat (beta = 0) line is always a candidate, so SSE <= SST. When the times
  // carry no variance the flat line fits them exactly and R^2 = 1 by convention.
  constexpr double kNoVariance = 1e-24;  // per point, in squared relative units
  if (sst <= kNoVariance * static_cast<double>(pts.size())) {
    s.r2 = 1.0;
  } else {
    s.r2 = std::clamp(1.0 - f.sse / sst, 0.0, 1.0);
  }
  s.rms_rel_residual = std::sqrt(f.sse / static_cast<double>(pts.size()));
  return s;
}

// Type 7 quantile of sorted data (linear interpolation between order statistics).
double percentile_sorted(const std::vector<double>& v, double q) {
  const double h = static_cast<double>(v.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(h);
  if (lo + 1 >= v.size()) return v.back();
  return v[lo] + (h - static_cast<double>(lo)) * (v[lo + 1] - v[lo]);
}

// Percentile bootstrap of one segment's parameters: resample its points with
// replacement, refit, take the 2.5 / 97.5 percentiles.
void bootstrap(std::span<const Point> pts, Segment& seg, std::size_t resamples,
               std::mt19937_64& rng) {
  const std::size_t m = pts.size();
  std::vector<Point> sample(m);
  std::vector<double> alphas, betas;
  alphas.reserve(resamples);
  betas.reserve(resamples);
  for (std::size_t b = 0; b < resamples; ++b) {
    for (Point& p : sample) {
      // Plain modulo instead of std::uniform_int_distribution: mt19937_64 is fully
      // specified, the distribution is not, so this keeps results identical across
      // standard libraries. The bias (m / 2^64) is irrelevant.
      p = pts[static_cast<std::size_t>(rng() % m)];
    }
    const bool degenerate = std::all_of(sample.begin(), sample.end(), [&](const Point& p) {
      return p.bytes == sample.front().bytes;
    });
    if (degenerate) continue;  // slope undefined: this resample says nothing
    const LineFit f = fit_line(sample);
    alphas.push_back(f.alpha);
    betas.push_back(f.beta);
  }
  if (alphas.empty()) return;  // keep the collapsed intervals
  std::sort(alphas.begin(), alphas.end());
  std::sort(betas.begin(), betas.end());
  seg.alpha_ci = {percentile_sorted(alphas, 0.025), percentile_sorted(alphas, 0.975)};
  seg.beta_ci = {percentile_sorted(betas, 0.025), percentile_sorted(betas, 0.975)};
}

}  // namespace

Segment fit_segment(std::span<const Point> points) {
  validate_points(points, "fit_segment");
  return describe(points, fit_line(points));
}

PiecewiseFit fit_piecewise(std::span<const Point> points, const FitOptions& options) {
  if (options.max_segments < 1)
    throw std::invalid_argument("fit_piecewise: max_segments must be at least 1");
  // Two points fit any line exactly; fewer would make SSE meaningless.
  if (options.min_points_per_segment < 2)
    throw std::invalid_argument("fit_piecewise: min_points_per_segment must be at least 2");
  validate_points(points, "fit_piecewise");
  const std::size_t n = points.size();
  const std::size_t m = options.min_points_per_segment;
  if (n < options.min_points()) {
    std::ostringstream msg;
    msg << "fit_piecewise: need at least " << options.min_points()
        << " points (a line through fewer says nothing of how well it fits), got " << n;
    throw std::invalid_argument(msg.str());
  }

  std::vector<Point> pts(points.begin(), points.end());
  std::stable_sort(pts.begin(), pts.end(),
                   [](const Point& a, const Point& b) { return a.bytes < b.bytes; });
  const std::span<const Point> all(pts);

  // A run's cost: the SSE of one line through it; a boundary must not split repeated
  // measurements of the same size across two runs (ranges must not overlap).
  const auto cut_ok = [&](std::size_t i) { return i == 0 || i == n || pts[i - 1].bytes < pts[i].bytes; };
  const auto line_cost = [&](std::size_t i, std::size_t j) {
    return cut_ok(i) && cut_ok(j) ? fit_line(all.subspan(i, j - i)).sse : std::numeric_limits<double>::infinity();
  };
  // The SSE is of relative residuals; its mean square is floored at a 1e-6 rms relative
  // residual (timers resolve no better). With 27 noisy sizes the guard brings false
  // splits from 3 in 20 sweeps to about 1 in 200 (the tests' 5% noise). When every point
  // says how precise it is (rel_sigma, from its CI), the noise is known: the variance of
  // a relative residual is (median rel_sigma)^2 + scatter_floor^2.
  SegmentationOptions rule{.min_points = m, .max_runs = options.max_segments, .params_per_run = 2,
                          .min_mean_square = 1e-12, .min_gain_per_run = 0.5};
  if (std::all_of(pts.begin(), pts.end(), [](const Point& p) { return p.rel_sigma > 0; })) {
    std::vector<double> sig;
    for (const Point& p : pts) sig.push_back(p.rel_sigma);
    std::nth_element(sig.begin(), sig.begin() + sig.size() / 2, sig.end());
    rule.known_variance = sig[sig.size() / 2] * sig[sig.size() / 2] + options.scatter_floor * options.scatter_floor;
  }
  Segmentation chosen;
  try {
    chosen = segment_series(n, line_cost, rule);
  } catch (const std::invalid_argument&) {  // only when repeated sizes leave no boundary
    throw std::invalid_argument("fit_piecewise: no admissible segmentation (too few distinct sizes)");
  }
  const std::vector<std::size_t>& starts = chosen.starts;
  PiecewiseFit fit;
  fit.criterion = chosen.criterion;
  std::mt19937_64 rng(options.seed);  // one stream for all segments: deterministic
  for (std::size_t k = 0; k < chosen.runs(); ++k) {
    const auto seg_pts = all.subspan(starts[k], starts[k + 1] - starts[k]);
    Segment seg = describe(seg_pts, fit_line(seg_pts));
    bootstrap(seg_pts, seg, options.bootstrap_resamples, rng);
    fit.segments.push_back(seg);
  }
  return fit;
}

const Segment& segment_for(const PiecewiseFit& fit, double bytes) {
  if (fit.segments.empty()) throw std::invalid_argument("segment_for: fit has no segments");
  const auto& segs = fit.segments;
  if (bytes <= segs.front().hi_bytes) return segs.front();  // inside or below the range
  for (std::size_t i = 1; i < segs.size(); ++i) {
    if (bytes > segs[i].hi_bytes) continue;
    if (bytes >= segs[i].lo_bytes) return segs[i];
    // In the gap between two fitted ranges (the switch lies somewhere in it). Sizes
    // are swept geometrically, so "nearest" is judged on a log scale: the boundary
    // is the geometric mean of the two range ends.
    const double left = segs[i - 1].hi_bytes, right = segs[i].lo_bytes;
    const double boundary = left > 0 ? std::sqrt(left * right) : 0.5 * (left + right);
    return bytes <= boundary ? segs[i - 1] : segs[i];
  }
  return segs.back();  // above the range: extrapolate with the last segment
}

PiecewiseTerms predict_terms(const PiecewiseFit& fit, double bytes) {
  if (!(std::isfinite(bytes) && bytes >= 0))
    throw std::invalid_argument("predict: message size must be non-negative and finite");
  const auto& segs = fit.segments;
  const Segment& s = segment_for(fit, bytes);
  PiecewiseTerms t;
  t.segment = static_cast<std::size_t>(&s - segs.data());
  t.alpha_part = s.alpha;
  t.beta_part = s.beta * bytes;
  for (std::size_t i = 1; i < segs.size(); ++i) {
    const Segment &a = segs[i - 1], &b = segs[i];
    const double left = a.hi_bytes, right = b.lo_bytes;
    if (!(bytes > left && bytes < right && left > 0)) continue;
    const double t_left = a.alpha + a.beta * left, t_right = b.alpha + b.beta * right;
    if (!(t_left > 0 && t_right > 0)) break;  // degenerate lines: keep the nearer one
    const double w = std::log(bytes / left) / std::log(right / left);
    const double seconds = std::exp((1 - w) * std::log(t_left) + w * std::log(t_right));
    t.bridged = true;
    t.left = i - 1;
    t.right = i;
    t.alpha_part = std::min((1 - w) * a.alpha + w * b.alpha, seconds);
    t.beta_part = seconds - t.alpha_part;
    break;
  }
  return t;
}

double predict(const PiecewiseFit& fit, double bytes) { return predict_terms(fit, bytes).seconds(); }

}  // namespace sextant::model
