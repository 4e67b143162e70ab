// Tests of the piecewise Hockney fit on synthetic sweeps with known parameters.
#include "models/hockney.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "tests/unit/portable_random.hpp"

namespace {

using sextant::model::FitOptions;
using sextant::model::fit_piecewise;
using sextant::model::fit_segment;
using sextant::model::PiecewiseFit;
using sextant::model::Point;
using sextant::model::predict;
using sextant::model::Segment;
using sextant::model::segment_for;

constexpr double KiB = 1024.0;
constexpr double MiB = 1024.0 * KiB;

// Standard normal draws that are the same on every standard library.
class Normal {
 public:
  explicit Normal(std::uint64_t seed) : random_(seed) {}
  double operator()() { return random_.normal(); }

 private:
  sextant::testing::Random random_;
};

// Sizes 1 B .. 64 MiB in powers of two (27 sizes), time = model(n) * (1 + noise * z).
std::vector<Point> sweep(const std::function<double(double)>& model, double noise,
                         std::uint64_t seed) {
  Normal z(seed);
  std::vector<Point> pts;
  for (double n = 1; n <= 64 * MiB; n *= 2) pts.push_back({n, model(n) * (1.0 + noise * z())});
  return pts;
}

bool contains(const sextant::model::Interval& ci, double x) { return ci.lo <= x && x <= ci.hi; }

// ---------------------------------------------------------------- fit_segment

TEST(HockneyFitSegment, ExactLineIsRecoveredExactly) {
  std::vector<Point> pts;
  for (double n : {8.0, 64.0, 512.0, 4096.0, 32768.0}) pts.push_back({n, 1e-6 + n * 1e-10});
  const Segment s = fit_segment(pts);
  EXPECT_NEAR(s.alpha, 1e-6, 1e-15);
  EXPECT_NEAR(s.beta, 1e-10, 1e-19);
  EXPECT_NEAR(s.r2, 1.0, 1e-12);
  EXPECT_LT(s.rms_rel_residual, 1e-12);
  EXPECT_EQ(s.points, 5u);
  EXPECT_EQ(s.lo_bytes, 8.0);
  EXPECT_EQ(s.hi_bytes, 32768.0);
  // A single segment carries no bootstrap: the intervals collapse to the estimate.
  EXPECT_EQ(s.alpha_ci.lo, s.alpha);
  EXPECT_EQ(s.alpha_ci.hi, s.alpha);
  EXPECT_EQ(s.beta_ci.lo, s.beta);
  EXPECT_EQ(s.beta_ci.hi, s.beta);
}

TEST(HockneyFitSegment, NegativeInterceptIsClampedToZero) {
  // t = -1e-6 + 1e-9 n: the free fit has alpha < 0, so alpha is fixed at 0.
  std::vector<Point> pts;
  for (double n : {2000.0, 4000.0, 8000.0, 16000.0}) pts.push_back({n, -1e-6 + 1e-9 * n});
  const Segment s = fit_segment(pts);
  EXPECT_EQ(s.alpha, 0.0);
  EXPECT_GT(s.beta, 0.0);
}

TEST(HockneyFitSegment, DecreasingTimesGiveZeroSlope) {
  // Times falling with size would need beta < 0: beta is fixed at 0 and alpha is
  // the relative-error best constant.
  const std::vector<Point> pts{{1, 4e-6}, {10, 3e-6}, {100, 2e-6}};
  const Segment s = fit_segment(pts);
  EXPECT_EQ(s.beta, 0.0);
  EXPECT_GT(s.alpha, 2e-6);
  EXPECT_LT(s.alpha, 4e-6);
  EXPECT_GE(s.r2, 0.0);
  EXPECT_LE(s.r2, 1.0);
}

TEST(HockneyFitSegment, ConstantTimesHaveUnitR2) {
  const std::vector<Point> pts{{1, 2e-6}, {2, 2e-6}, {4, 2e-6}, {8, 2e-6}};
  const Segment s = fit_segment(pts);
  EXPECT_NEAR(s.alpha, 2e-6, 1e-18);
  EXPECT_NEAR(s.beta, 0.0, 1e-20);
  EXPECT_EQ(s.r2, 1.0);
}

TEST(HockneyFitSegment, RejectsBadInput) {
  EXPECT_THROW(fit_segment(std::vector<Point>{}), std::invalid_argument);
  EXPECT_THROW(fit_segment(std::vector<Point>{{1, 1e-6}, {2, 0.0}}), std::invalid_argument);
  EXPECT_THROW(fit_segment(std::vector<Point>{{1, 1e-6}, {2, -1e-6}}), std::invalid_argument);
}

// ---------------------------------------------------------------- fit_piecewise

TEST(HockneyPiecewise, OneLineRecoversParameters) {
  const double alpha = 2e-6, beta = 1.0 / 10e9;
  const auto pts = sweep([&](double n) { return alpha + beta * n; }, 0.01, 42);
  const PiecewiseFit fit = fit_piecewise(pts);

  ASSERT_EQ(fit.segments.size(), 1u);
  const Segment& s = fit.segments[0];
  EXPECT_EQ(s.points, 27u);
  EXPECT_EQ(s.lo_bytes, 1.0);
  EXPECT_EQ(s.hi_bytes, 64 * MiB);
  EXPECT_NEAR(s.alpha, alpha, 0.05 * alpha);
  EXPECT_NEAR(1.0 / s.beta, 1.0 / beta, 0.03 / beta);
  EXPECT_TRUE(contains(s.alpha_ci, alpha)) << s.alpha_ci.lo << " .. " << s.alpha_ci.hi;
  EXPECT_TRUE(contains(s.beta_ci, beta)) << s.beta_ci.lo << " .. " << s.beta_ci.hi;
  EXPECT_TRUE(contains(s.alpha_ci, s.alpha));
  EXPECT_TRUE(contains(s.beta_ci, s.beta));
  EXPECT_GT(s.r2, 0.99);
  EXPECT_LT(s.rms_rel_residual, 0.02);
  EXPECT_TRUE(std::isfinite(fit.criterion));
}

// Eager (0.5 us, 5 GB/s) up to 32 KiB, rendezvous (12 GB/s) from 64 KiB, 2% noise.
// The rendezvous alpha is 12 us so that the time really jumps at 64 KiB (by ~28%).
// With alpha = 8 us the two lines nearly meet there (13.6 vs 13.5 us, 1% apart), so
// which segment the 64 KiB point belongs to is decided by the noise: see the next test.
TEST(HockneyPiecewise, TwoSegmentsEagerRendezvousJump) {
  const double rndv_alpha = 12e-6;
  const auto model = [&](double n) {
    return n <= 32 * KiB ? 0.5e-6 + n / 5e9 : rndv_alpha + n / 12e9;
  };
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    const auto pts = sweep(model, 0.02, seed);
    const PiecewiseFit fit = fit_piecewise(pts);

    ASSERT_EQ(fit.segments.size(), 2u);
    const Segment& eager = fit.segments[0];
    const Segment& rndv = fit.segments[1];
    EXPECT_EQ(eager.lo_bytes, 1.0);
    EXPECT_EQ(eager.hi_bytes, 32 * KiB);
    EXPECT_EQ(rndv.lo_bytes, 64 * KiB);
    EXPECT_EQ(rndv.hi_bytes, 64 * MiB);
    EXPECT_EQ(eager.points + rndv.points, pts.size());

    EXPECT_NEAR(eager.alpha, 0.5e-6, 0.10 * 0.5e-6);
    EXPECT_NEAR(rndv.alpha, rndv_alpha, 0.10 * rndv_alpha);
    EXPECT_NEAR(1.0 / eager.beta, 5e9, 0.05 * 5e9);
    EXPECT_NEAR(1.0 / rndv.beta, 12e9, 0.05 * 12e9);
    // The later protocol costs more to start: the jump is in alpha.
    EXPECT_GT(rndv.alpha, eager.alpha);
  }
}

// Rendezvous alpha 8 us: the switch changes alpha and beta but hardly the time at
// 64 KiB, so the breakpoint is found within one size step and the parameters are
// still recovered.
TEST(HockneyPiecewise, TwoSegmentsNearlyContinuousSwitch) {
  const auto model = [](double n) {
    return n <= 32 * KiB ? 0.5e-6 + n / 5e9 : 8e-6 + n / 12e9;
  };
  const auto pts = sweep(model, 0.02, 7);
  const PiecewiseFit fit = fit_piecewise(pts);

  ASSERT_EQ(fit.segments.size(), 2u);
  const Segment& eager = fit.segments[0];
  const Segment& rndv = fit.segments[1];
  EXPECT_TRUE(eager.hi_bytes == 32 * KiB || eager.hi_bytes == 64 * KiB) << eager.hi_bytes;
  EXPECT_EQ(rndv.lo_bytes, 2 * eager.hi_bytes);
  EXPECT_NEAR(eager.alpha, 0.5e-6, 0.10 * 0.5e-6);
  EXPECT_NEAR(rndv.alpha, 8e-6, 0.10 * 8e-6);
  EXPECT_NEAR(1.0 / eager.beta, 5e9, 0.05 * 5e9);
  EXPECT_NEAR(1.0 / rndv.beta, 12e9, 0.05 * 12e9);
}

TEST(HockneyPiecewise, ThreeSegmentsEagerJumpAndCacheEffect) {
  // Eager up to 32 KiB; rendezvous at 20 GB/s while the message fits in cache
  // (up to 1 MiB); 8 GB/s beyond that.
  const auto model = [](double n) {
    if (n <= 32 * KiB) return 0.5e-6 + n / 5e9;
    if (n <= 1 * MiB) return 8e-6 + n / 20e9;
    return 10e-6 + n / 8e9;
  };
  for (std::uint64_t seed = 11; seed <= 15; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    const PiecewiseFit fit = fit_piecewise(sweep(model, 0.01, seed));

    ASSERT_EQ(fit.segments.size(), 3u);
    EXPECT_EQ(fit.segments[0].hi_bytes, 32 * KiB);
    EXPECT_EQ(fit.segments[1].lo_bytes, 64 * KiB);
    EXPECT_EQ(fit.segments[1].hi_bytes, 1 * MiB);
    EXPECT_EQ(fit.segments[2].lo_bytes, 2 * MiB);
    EXPECT_NEAR(1.0 / fit.segments[0].beta, 5e9, 0.05 * 5e9);
    EXPECT_NEAR(1.0 / fit.segments[1].beta, 20e9, 0.05 * 20e9);
    EXPECT_NEAR(1.0 / fit.segments[2].beta, 8e9, 0.05 * 8e9);
    EXPECT_NEAR(fit.segments[1].alpha, 8e-6, 0.10 * 8e-6);
    for (const Segment& s : fit.segments) {
      EXPECT_GE(s.points, FitOptions{}.min_points_per_segment);
    }
  }
}

TEST(HockneyPiecewise, PureNoiseIsNotSplit) {
  const auto line = [](double n) { return 2e-6 + n / 10e9; };
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto pts = sweep(line, 0.05, seed);
    const PiecewiseFit fit = fit_piecewise(pts);
    EXPECT_EQ(fit.segments.size(), 1u) << "seed " << seed;
  }
}

// With each point's precision known (rel_sigma), the known-variance criterion: pure
// noise at the stated level stays one line ...
TEST(HockneyPiecewise, KnownNoiseIsNotSplit) {
  const auto line = [](double n) { return 2e-6 + n / 10e9; };
  for (double noise : {0.005, 0.03}) {
    int splits = 0;
    for (std::uint64_t seed = 1; seed <= 50; ++seed) {
      auto pts = sweep(line, noise, seed);
      for (auto& p : pts) p.rel_sigma = noise;
      splits += fit_piecewise(pts).segments.size() > 1;
    }
    EXPECT_LE(splits, 1) << "noise " << noise;
  }
}

// ... while structure far above it (a bend from one cache level's slope to the next
// over a factor 4 in size, a 25% algorithm switch) buys the segments it needs, and the
// fit then predicts sizes it never saw (a sweep 2^(1/4) apart) within a few percent.
TEST(HockneyPiecewise, KnownNoiseFollowsBendsAndSwitches) {
  const auto model = [](double n) {
    const double fast = 1 / 25e9, slow = 1 / 10e9;  // s/B in L2, from L3
    const double lo = 512 * KiB, hi = 2 * MiB;      // the bend: a share of slow bytes rising
    const double share = n <= lo ? 0 : n >= hi ? 1 : std::log(n / lo) / std::log(hi / lo);
    const double t = 1e-6 + n * (fast + share * (slow - fast));
    return n < 64 * KiB ? t : 0.75 * t + 2e-6;  // a switch at 64 KiB
  };
  auto pts = sweep(model, 0.003, 7);
  for (auto& p : pts) p.rel_sigma = 0.003;
  const PiecewiseFit known = fit_piecewise(pts);
  auto unknown_pts = pts;
  for (auto& p : unknown_pts) p.rel_sigma = 0;
  const PiecewiseFit unknown = fit_piecewise(unknown_pts);
  EXPECT_GE(known.segments.size(), 4u);
  EXPECT_GT(known.segments.size(), unknown.segments.size());
  // Mean |relative error| over sizes between the fitted ones (a sweep 2^(1/4) apart),
  // leaving out the interval where the switch lies (no fit can place it).
  const auto mean_error = [&](const PiecewiseFit& fit) {
    double sum = 0;
    int count = 0;
    for (double n = 1.19; n <= 64 * MiB; n *= std::pow(2.0, 0.25)) {
      if (n > 32 * KiB && n < 64 * KiB) continue;
      sum += std::fabs(predict(fit, n) / model(n) - 1);
      ++count;
    }
    return sum / count;
  };
  const double known_error = mean_error(known), unknown_error = mean_error(unknown);
  std::printf("segments: %zu known noise, %zu unknown; mean error %.2f%% vs %.2f%%\n", known.segments.size(),
              unknown.segments.size(), 100 * known_error, 100 * unknown_error);
  EXPECT_LT(known_error, 0.025);
  EXPECT_LT(known_error, 0.75 * unknown_error);
}

TEST(HockneyPiecewise, UnsortedInputAndOtherFactor) {
  // Sizes grow by 4 rather than 2; the points arrive in reverse order.
  std::vector<Point> pts;
  for (double n = 1; n <= 64 * MiB; n *= 4) pts.push_back({n, 3e-6 + n / 6e9});
  std::reverse(pts.begin(), pts.end());
  const PiecewiseFit fit = fit_piecewise(pts);
  ASSERT_EQ(fit.segments.size(), 1u);
  EXPECT_EQ(fit.segments[0].lo_bytes, 1.0);
  EXPECT_EQ(fit.segments[0].hi_bytes, 64 * MiB);
  EXPECT_NEAR(fit.segments[0].alpha, 3e-6, 1e-12);
  EXPECT_NEAR(1.0 / fit.segments[0].beta, 6e9, 1.0);
}

TEST(HockneyPiecewise, BootstrapIsDeterministicForASeed) {
  const auto model = [](double n) {
    return n <= 32 * KiB ? 0.5e-6 + n / 5e9 : 8e-6 + n / 12e9;
  };
  const auto pts = sweep(model, 0.02, 3);
  FitOptions opt;
  opt.seed = 99;
  const PiecewiseFit a = fit_piecewise(pts, opt);
  const PiecewiseFit b = fit_piecewise(pts, opt);
  ASSERT_EQ(a.segments.size(), b.segments.size());
  for (std::size_t i = 0; i < a.segments.size(); ++i) {
    EXPECT_EQ(a.segments[i].alpha_ci.lo, b.segments[i].alpha_ci.lo);
    EXPECT_EQ(a.segments[i].alpha_ci.hi, b.segments[i].alpha_ci.hi);
    EXPECT_EQ(a.segments[i].beta_ci.lo, b.segments[i].beta_ci.lo);
    EXPECT_EQ(a.segments[i].beta_ci.hi, b.segments[i].beta_ci.hi);
    EXPECT_LT(a.segments[i].alpha_ci.lo, a.segments[i].alpha_ci.hi);
    EXPECT_LT(a.segments[i].beta_ci.lo, a.segments[i].beta_ci.hi);
  }
  // No resamples: the intervals collapse to the point estimates.
  opt.bootstrap_resamples = 0;
  const PiecewiseFit c = fit_piecewise(pts, opt);
  for (const Segment& s : c.segments) {
    EXPECT_EQ(s.alpha_ci.lo, s.alpha);
    EXPECT_EQ(s.beta_ci.hi, s.beta);
  }
}

TEST(HockneyPiecewise, RepeatedSizesAreNotSplitAcrossSegments) {
  // Two measurements per size: a boundary never falls between equal sizes, so the
  // segment ranges do not overlap.
  const auto model = [](double n) {
    return n <= 32 * KiB ? 0.5e-6 + n / 5e9 : 12e-6 + n / 12e9;
  };
  auto pts = sweep(model, 0.02, 5);
  const auto more = sweep(model, 0.02, 6);
  pts.insert(pts.end(), more.begin(), more.end());
  const PiecewiseFit fit = fit_piecewise(pts);
  ASSERT_EQ(fit.segments.size(), 2u);
  EXPECT_EQ(fit.segments[0].hi_bytes, 32 * KiB);
  EXPECT_EQ(fit.segments[1].lo_bytes, 64 * KiB);
  EXPECT_EQ(fit.segments[0].points, 32u);
  EXPECT_EQ(fit.segments[1].points, 22u);
}

TEST(HockneyPiecewise, MaxSegmentsIsRespected) {
  const auto model = [](double n) {
    return n <= 32 * KiB ? 0.5e-6 + n / 5e9 : 8e-6 + n / 12e9;
  };
  FitOptions opt;
  opt.max_segments = 1;
  const PiecewiseFit fit = fit_piecewise(sweep(model, 0.02, 7), opt);
  EXPECT_EQ(fit.segments.size(), 1u);
}

TEST(HockneyPiecewise, RejectsBadInput) {
  EXPECT_THROW(fit_piecewise(std::vector<Point>{}), std::invalid_argument);
  // Too few points for any fit (kMinPoints, 3).
  EXPECT_THROW(fit_piecewise(std::vector<Point>{{1, 1e-6}, {2, 2e-6}}), std::invalid_argument);
  auto pts = sweep([](double n) { return 1e-6 + n * 1e-10; }, 0.0, 1);
  pts[5].seconds = 0.0;
  EXPECT_THROW(fit_piecewise(pts), std::invalid_argument);
  pts[5].seconds = -1e-6;
  EXPECT_THROW(fit_piecewise(pts), std::invalid_argument);
  pts[5].seconds = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(fit_piecewise(pts), std::invalid_argument);
  try {
    fit_piecewise(std::vector<Point>{{1, 1e-6}, {2, 0.0}, {4, 1e-6}});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("positive"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- predict

TEST(HockneyPredict, InsideGapAndBeyondTheRange) {
  const auto model = [](double n) {
    return n <= 32 * KiB ? 0.5e-6 + n / 5e9 : 8e-6 + n / 12e9;
  };
  const PiecewiseFit fit = fit_piecewise(sweep(model, 0.0, 1));
  ASSERT_EQ(fit.segments.size(), 2u);
  const Segment& eager = fit.segments[0];
  const Segment& rndv = fit.segments[1];

  // Inside each segment the prediction is that segment's line (and, with exact
  // data, the truth).
  EXPECT_EQ(&segment_for(fit, 1000), &eager);
  EXPECT_NEAR(predict(fit, 1000), model(1000), 1e-6 * model(1000));
  EXPECT_EQ(&segment_for(fit, 1 * MiB), &rndv);
  EXPECT_NEAR(predict(fit, 1 * MiB), model(1 * MiB), 1e-6 * model(1 * MiB));

  // Beyond the measured range: the last segment extrapolates; below it, the first.
  EXPECT_EQ(&segment_for(fit, 1024 * MiB), &rndv);
  EXPECT_NEAR(predict(fit, 1024 * MiB), rndv.alpha + rndv.beta * 1024 * MiB, 1e-15);
  EXPECT_NEAR(predict(fit, 1024 * MiB), model(1024 * MiB), 1e-6 * model(1024 * MiB));
  EXPECT_EQ(&segment_for(fit, 0), &eager);
  EXPECT_NEAR(predict(fit, 0), eager.alpha, 1e-18);

  // Between 32 KiB and 64 KiB: the nearer range on a log scale names the segment, and
  // the time is interpolated on log-log axes between the two ranges' ends: at 45.25
  // KiB (halfway on a log scale) the geometric mean of the times at 32 and 64 KiB.
  EXPECT_EQ(&segment_for(fit, 36 * KiB), &eager);
  EXPECT_EQ(&segment_for(fit, 60 * KiB), &rndv);
  const double t32 = eager.alpha + eager.beta * eager.hi_bytes, t64 = rndv.alpha + rndv.beta * rndv.lo_bytes;
  const double mid = std::sqrt(eager.hi_bytes * rndv.lo_bytes);
  const auto terms = sextant::model::predict_terms(fit, mid);
  EXPECT_TRUE(terms.bridged);
  EXPECT_NEAR(terms.seconds(), std::sqrt(t32 * t64), 1e-12 * t64);
  EXPECT_NEAR(terms.alpha_part, 0.5 * (eager.alpha + rndv.alpha), 1e-15);
  EXPECT_GT(predict(fit, 40 * KiB), t32);  // between the ends, rising
  EXPECT_LT(predict(fit, 40 * KiB), predict(fit, 50 * KiB));
  EXPECT_LT(predict(fit, 50 * KiB), t64);
  EXPECT_FALSE(sextant::model::predict_terms(fit, 1000).bridged);

  EXPECT_THROW(predict(fit, -1.0), std::invalid_argument);
  EXPECT_THROW(predict(PiecewiseFit{}, 1.0), std::invalid_argument);
}

}  // namespace
