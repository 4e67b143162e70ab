// Algorithm-aware collective costs against their closed forms (docs/models.md; power-of-
// two p, one Hockney segment), and identification of the algorithm a synthetic
// "library" ran, with its switch point.
#include <gtest/gtest.h>

#include <cmath>

#include "models/collectives.hpp"

using namespace sextant::model;

namespace {

constexpr double alpha = 2e-6, beta = 1e-9, gamma_ = 0.25e-9;

PiecewiseFit one_segment() {
  PiecewiseFit f;
  Segment s;
  s.lo_bytes = 0;
  s.hi_bytes = 1e12;
  s.alpha = alpha;
  s.beta = beta;
  f.segments.push_back(s);
  return f;
}

double cost(const char* op, const char* alg, double n, int p) {
  static const PiecewiseFit link = one_segment();
  const CollectiveAlgorithm* a = find_algorithm(op, alg);
  EXPECT_NE(a, nullptr) << op << " " << alg;
  return a ? a->cost(Link{&link, gamma_}, n, p).total() : 0;
}

}  // namespace

TEST(CollectiveCosts, MatchTheClosedFormsForPowersOfTwo) {
  const double n = 1 << 20;
  for (int p : {2, 4, 8, 64}) {
    double lg = std::log2(p), f = double(p - 1) / p;
    auto near = [&](double got, double want, const char* what) {
      EXPECT_NEAR(got, want, 1e-12 * want + 1e-15) << what << " p=" << p;
    };
    near(cost("allreduce", "recursive_doubling", n, p), lg * alpha + n * lg * beta + n * lg * gamma_, "ar rd");
    near(cost("allreduce", "rabenseifner", n, p), 2 * lg * alpha + 2 * n * f * beta + n * f * gamma_, "ar rab");
    near(cost("allreduce", "ring", n, p), 2 * (p - 1) * alpha + 2 * n * f * beta + n * f * gamma_, "ar ring");
    near(cost("allgather", "ring", n, p), (p - 1) * alpha + n * f * beta, "ag ring");
    near(cost("allgather", "recursive_doubling", n, p), lg * alpha + n * f * beta, "ag rd");
    near(cost("reduce_scatter", "recursive_halving", n, p), lg * alpha + n * f * (beta + gamma_), "rs rh");
    near(cost("reduce_scatter", "pairwise", n, p), (p - 1) * alpha + n * f * (beta + gamma_), "rs pw");
    near(cost("bcast", "binomial", n, p), lg * (alpha + n * beta), "bc bin");
    near(cost("bcast", "scatter_allgather", n, p), 2 * lg * alpha + 2 * n * f * beta, "bc sag");
    near(cost("reduce", "binomial", n, p), lg * (alpha + n * beta + n * gamma_), "red bin");
    near(cost("bcast", "chain", n, p), (p - 1) * (alpha + n * beta), "bc chain");
    near(cost("reduce", "chain", n, p), (p - 1) * (alpha + n * beta + n * gamma_), "red chain");
    near(cost("alltoall", "bruck", n, p), lg * alpha + n / 2 * lg * beta, "a2a bruck");
    near(cost("alltoall", "pairwise", n, p), (p - 1) * alpha + n * f * beta, "a2a pw");
    near(cost("gather", "binomial", n, p), lg * alpha + n * f * beta, "gather");
    near(cost("barrier", "dissemination", 0, p), lg * alpha, "barrier");
  }
}

TEST(CollectiveCosts, NonPowerOfTwoCostsMoreThanTheNextPowerBelow) {
  for (const char* alg : {"recursive_doubling", "rabenseifner", "ring"})
    EXPECT_GT(cost("allreduce", alg, 65536, 6), cost("allreduce", alg, 65536, 4)) << alg;
}

// The binomial bcast's critical path away from powers of two, worked by hand from
// MPICH's send order (the root sends to r + 4, r + 2, r + 1 where below p).
TEST(CollectiveCosts, BinomialBcastFollowsTheTreesCriticalPath) {
  const double n = 4096;
  // p = 3: 0 -> 2, then 0 -> 1: one latency, and rank 1 waits for two injections.
  EXPECT_NEAR(cost("bcast", "binomial", n, 3), alpha + 2 * n * beta, 1e-15);
  // p = 6: rank 3 is 0 -> 2 (the root's second send) -> 3: two latencies, 2 + 1 injections.
  EXPECT_NEAR(cost("bcast", "binomial", n, 6), 2 * alpha + 3 * n * beta, 1e-15);
  // p = 5: rank 4 first (one hop); rank 3: 0 -> 2 (second send) -> 3: 2 alpha + 3 n beta.
  EXPECT_NEAR(cost("bcast", "binomial", n, 5), 2 * alpha + 3 * n * beta, 1e-15);
  // A tree is never slower than its rounds, ceil(lg p) (alpha + n beta).
  for (int p = 2; p <= 64; ++p)
    EXPECT_LE(cost("bcast", "binomial", n, p), std::ceil(std::log2(p)) * (alpha + n * beta) * (1 + 1e-12)) << p;
}

// Away from powers of two the schedules' slowest rank, worked by hand from MPICH's
// schedules (zero bytes: latencies only), and what namespace hosts at 500 us measured
// (latencies of the slowest rank, in one-way ping-pong times): recursive doubling 2,
// 3.1, 3.4, 4.3, 3.6 at p = 3, 5, 6, 7, 8; binomial reduce 1, 2, 2, 2, 2, 3 at p = 3..8.
TEST(CollectiveCosts, SchedulesTakeTheSlowestRanksPath) {
  auto latencies = [](const char* op, const char* alg, int p) { return cost(op, alg, 0, p) / alpha; };
  // p = 5: rank 0 folds into 1 (1), 1 exchanges with 2 and 3 as its data comes, and the
  // result reaches 0 at 3; rank 4's partner 2 sent at 1: also 3. p = 7: 3 and 6 finish
  // their second exchange at 3, and 3's result reaches 2 at 4.
  const double rd[] = {0, 0, 1, 2, 2, 3, 3, 4, 3};
  for (int p = 2; p <= 8; ++p)
    EXPECT_NEAR(latencies("allreduce", "recursive_doubling", p), rd[p], 1e-9) << "allreduce rd p=" << p;
  // A binomial reduce's leaves send at once: the depth of the tree is what waits.
  const double red[] = {0, 0, 1, 1, 2, 2, 2, 2, 3};
  for (int p = 2; p <= 8; ++p) EXPECT_NEAR(latencies("reduce", "binomial", p), red[p], 1e-9) << "reduce p=" << p;
  // Folding in and out costs two messages in the path at most, never fewer rounds than
  // the power of two below.
  for (int p = 3; p <= 64; ++p)
    for (const char* alg : {"recursive_doubling", "rabenseifner"}) {
      const int below = 1 << static_cast<int>(std::floor(std::log2(p)));
      EXPECT_GE(cost("allreduce", alg, 4096, p), cost("allreduce", alg, 4096, below) * (1 - 1e-12)) << alg << p;
      EXPECT_LE(latencies("allreduce", alg, p), latencies("allreduce", alg, below) + 2 + 1e-9) << alg << p;
    }
}

// A forced algorithm the library runs only at powers of two is its own choice elsewhere.
TEST(CollectiveCosts, RestrictedAlgorithmsSayWhereTheyRun) {
  const CollectiveAlgorithm* a = find_library_algorithm("bcast", "sched_scatter_recursive_doubling_allgather");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->runs(4));
  EXPECT_TRUE(a->runs(8));
  EXPECT_FALSE(a->runs(3));
  EXPECT_FALSE(a->runs(6));
  const CollectiveAlgorithm* binomial = find_library_algorithm("bcast", "sched_binomial");
  ASSERT_NE(binomial, nullptr);
  EXPECT_TRUE(binomial->runs(7));
  // Every block posted at once: one latency, whatever p.
  EXPECT_NEAR(cost("alltoall", "all_at_once", 0, 7) / alpha, 1, 1e-9);
  EXPECT_EQ(find_library_algorithm("alltoall", "sched_permuted_sendrecv"), find_algorithm("alltoall", "all_at_once"));
}

TEST(CollectiveCosts, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(busbw_factor("allreduce", 8), 2.0 * 7 / 8);
  for (const char* op : {"allgather", "reduce_scatter", "alltoall", "gather", "scatter"})
    EXPECT_DOUBLE_EQ(busbw_factor(op, 4), 0.75) << op;
  for (const char* op : {"bcast", "reduce"}) EXPECT_DOUBLE_EQ(busbw_factor(op, 4), 1.0) << op;
  EXPECT_EQ(base_op("iallreduce"), "allreduce");
  EXPECT_EQ(base_op("pingpong"), "pingpong");
}

TEST(CollectiveCosts, BenchmarkNamesCarryTheirAlgorithmAndForm) {
  EXPECT_EQ(isolated_form("allreduce"), "allreduce~isolated");
  EXPECT_TRUE(is_isolated_form("allreduce@ring~isolated"));
  EXPECT_FALSE(is_isolated_form("allreduce@ring"));
  EXPECT_FALSE(is_isolated_form("~isolated"));
  EXPECT_EQ(base_op("allreduce~isolated"), "allreduce");
  EXPECT_EQ(base_op("iallgather@ring~isolated"), "allgather");
  EXPECT_EQ(forced_algorithm("allreduce@ring~isolated"), "ring");
  EXPECT_EQ(forced_algorithm("allreduce@ring"), "ring");
  EXPECT_EQ(forced_algorithm("allreduce~isolated"), "");
}

// A library that runs recursive doubling below 64 KiB and the ring above, 10% slower
// than the link predicts (contention): the switch point and the factor are found.
TEST(AlgorithmIdentification, FindsTheSwitchPointAndCalibration) {
  const PiecewiseFit link = one_segment();
  const int p = 8;
  std::vector<Measured> measured;
  for (double n = 8; n <= 64 * 1024 * 1024; n *= 2) {
    const char* alg = n < 65536 ? "recursive_doubling" : "ring";
    double t = find_algorithm("allreduce", alg)->cost(Link{&link, gamma_}, n, p).total() * 1.1;
    measured.push_back({n, n, t});
  }
  auto ranges = identify_algorithms("allreduce", Link{&link, gamma_}, p, measured);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].algorithm, "recursive_doubling");
  EXPECT_EQ(ranges[0].hi_bytes, 32768);
  EXPECT_EQ(ranges[1].algorithm, "ring");
  EXPECT_EQ(ranges[1].lo_bytes, 65536);
  for (const auto& r : ranges) {
    EXPECT_NEAR(r.calibration, 1.1, 1e-9);
    EXPECT_NEAR(r.median_abs_error, 0.1, 1e-9);
  }
}

TEST(AlgorithmIdentification, AnIsolatedFlipIsNoiseNotASwitch) {
  const PiecewiseFit link = one_segment();
  std::vector<Measured> measured;
  int k = 0;
  for (double n = 1024; n <= 1 << 22; n *= 2, ++k) {
    const char* alg = k == 5 ? "recursive_doubling" : "ring";  // one odd size
    measured.push_back({n, n, find_algorithm("allreduce", alg)->cost(Link{&link, gamma_}, n, 16).total()});
  }
  auto ranges = identify_algorithms("allreduce", Link{&link, gamma_}, 16, measured);
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0].algorithm, "ring");
}
