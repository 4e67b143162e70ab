// Roofline pieces against synthetic truth: memory levels of a known staircase, an
// operator model recovering known efficiencies, and ceiling violations flagged.
#include <gtest/gtest.h>

#include <cmath>

#include "models/roofline.hpp"
#include "tests/unit/portable_random.hpp"

using namespace sextant::model;

namespace {

// A working-set sweep with 3 levels: 100 GB/s up to 32 KiB, 40 GB/s to 1 MiB, 12 GB/s beyond.
std::vector<CurvePoint> staircase(unsigned seed, double noise) {
  sextant::testing::Random rng(seed);
  std::vector<CurvePoint> c;
  for (double ws = 4096; ws <= 256.0 * 1024 * 1024; ws *= std::sqrt(2.0)) {
    double bw = ws <= 32768 ? 100e9 : ws <= 1048576 ? 40e9 : 12e9;
    c.push_back({ws, bw * (1 + noise * rng.normal())});
  }
  return c;
}

Ceilings ceilings() {
  Ceilings c;
  c.peak_flops["float64"] = 50e9;
  c.memory = {{"L1", 4096, 32768, 100e9, 4}, {"L2", 32769, 1048576, 40e9, 10}, {"DRAM", 1048577, 1e12, 12e9, 10}};
  return c;
}

}  // namespace

TEST(MemoryLevels, FindsTheStaircaseAndNamesItFromCacheSizes) {
  const double caches[] = {48 * 1024, 2 * 1024 * 1024};
  for (unsigned seed : {1u, 2u, 3u}) {
    auto levels = detect_memory_levels(staircase(seed, 0.03), caches);
    ASSERT_EQ(levels.size(), 3u) << "seed " << seed;
    EXPECT_NEAR(levels[0].bandwidth, 100e9, 5e9);
    EXPECT_NEAR(levels[1].bandwidth, 40e9, 2e9);
    EXPECT_NEAR(levels[2].bandwidth, 12e9, 0.6e9);
    EXPECT_LE(levels[0].hi_bytes, 32768);
    EXPECT_GT(levels[1].lo_bytes, 32768 / 1.5);
    EXPECT_EQ(levels[0].name, "L1");
    EXPECT_EQ(levels[1].name, "L2");
    EXPECT_EQ(levels[2].name, "DRAM");
  }
}

// A sweep that starts at the L1 size: its first plateau (L1's bandwidth up to 2 x L1)
// has its midpoint beyond L1, and was named L2 like the next. Each plateau gets a name
// of its own, in order; the last, mostly beyond a VM's huge reported L3, is DRAM.
TEST(MemoryLevels, PlateausGetDistinctNamesInOrder) {
  const double caches[] = {48 * 1024, 2 * 1024 * 1024, 260.0 * 1024 * 1024};
  std::vector<CurvePoint> pts;
  for (double ws = 48 * 1024; ws <= 1024.0 * 1024 * 1024; ws *= 2) {
    const double bw = ws <= 96 * 1024 ? 430e9 : ws <= 2.6e6 ? 177e9 : ws <= 75e6 ? 55e9 : 26e9;
    pts.push_back({ws, bw});
  }
  auto levels = detect_memory_levels(pts, caches);
  ASSERT_EQ(levels.size(), 4u);
  EXPECT_EQ(levels[0].name, "L1");
  EXPECT_EQ(levels[1].name, "L2");
  EXPECT_EQ(levels[2].name, "L3");
  EXPECT_EQ(levels[3].name, "DRAM");
}

// A measured triad sweep (float64, 2 threads, a VM reporting L1 48 KiB, L2 2 MiB, L3
// 260 MiB). Two plateaus do not halve the error of one here, but four cut it by far
// more than two halvings: the criterion must weigh four against the best accepted so
// far. Stopping at the first count that did not pay merged L3 with DRAM (50 GB/s for a
// 500 MiB working set that moves at 26).
TEST(MemoryLevels, ALevelThatPaysOnlyWithTheNextIsFound) {
  const double caches[] = {48 * 1024, 2 * 1024 * 1024, 260.0 * 1024 * 1024};
  const double ws[] = {49152, 95664, 186240, 362568, 705816, 1374000, 2674752, 5206848,
                       10135968, 19731312, 38410224, 74771736, 145555320, 283347048, 551580984, 1073741808};
  const double gbs[] = {900.7, 328.9, 189.0, 168.6, 203.5, 179.0, 165.7, 72.2, 56.1, 55.1, 50.4, 54.2, 28.4, 27.0, 26.3, 26.3};
  std::vector<CurvePoint> pts;
  for (std::size_t i = 0; i < std::size(ws); ++i) pts.push_back({ws[i], gbs[i] * 1e9});
  const auto levels = detect_memory_levels(pts, caches);
  ASSERT_EQ(levels.size(), 4u);
  EXPECT_EQ(levels[2].name, "L3");
  EXPECT_EQ(levels[3].name, "DRAM");
  Ceilings c;
  c.memory = levels;
  EXPECT_NEAR(c.bandwidth_for(20e6), 55e9, 3e9);    // L3: 55.1 measured there
  EXPECT_NEAR(c.bandwidth_for(500e6), 26.5e9, 2e9); // DRAM: 26.3-28.4 measured beyond 140 MB
}

TEST(MemoryLevels, NoiseOnOneLevelIsOneLevel) {
  sextant::testing::Random rng(7);
  std::vector<CurvePoint> flat;
  for (double ws = 4096; ws < 1e9; ws *= 2) flat.push_back({ws, 20e9 * (1 + 0.05 * rng.normal())});
  EXPECT_EQ(detect_memory_levels(flat).size(), 1u);
}

TEST(Ceilings, BandwidthForAWorkingSetIsItsLevel) {
  auto c = ceilings();
  EXPECT_EQ(c.bandwidth_for(16384), 100e9);
  EXPECT_EQ(c.bandwidth_for(65536), 40e9);
  EXPECT_EQ(c.bandwidth_for(1e9), 12e9);
  EXPECT_EQ(c.bandwidth_for(100), 100e9);  // below the sweep: nearest
  EXPECT_THROW(c.peak_for("float16"), std::invalid_argument);
}

// Shapes of a GEMM-like family (compute-bound when large) and small memory-bound calls:
// data from e_c = 0.6, e_m = 0.7, t0 = 3 us with 3% noise is fitted back.
TEST(OperatorModel, RecoversKnownEfficienciesAndPredictsHeldOutShapes) {
  auto c = ceilings();
  OperatorModel truth;
  truth.family = "gemm";
  truth.dtype = "float64";
  truth.e_compute = 0.6;
  truth.e_memory = 0.7;
  truth.t0 = 3e-6;
  sextant::testing::Random rng(11);
  std::vector<OperatorSample> fit, held;
  int k = 0;
  for (double m : {16.0, 24.0, 32.0, 48.0, 64.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0, 768.0})
    for (double ratio : {1.0, 4.0}) {
      double n = m, kk = m / ratio;
      double flops = 2 * m * n * kk, bytes = 8 * (m * kk + kk * n + 2 * m * n);
      OperatorSample s{"gemm", "float64", "", flops, bytes, truth.predict(c, flops, bytes) * (1 + 0.03 * rng.normal())};
      (k++ % 3 == 2 ? held : fit).push_back(s);
    }
  auto m = fit_operator(c, fit);
  EXPECT_NEAR(m.e_compute, 0.6, 0.05);
  EXPECT_NEAR(m.t0, 3e-6, 1e-6);
  EXPECT_LT(m.median_rel_error, 0.05);
  std::vector<double> err;
  for (const auto& s : held) err.push_back(std::fabs(m.predict(c, s.flops, s.bytes) / s.seconds - 1));
  std::sort(err.begin(), err.end());
  EXPECT_LT(err[err.size() / 2], 0.05);
}

// A family that counts no FLOPs (an embedding lookup: bytes only) leaves e_compute
// unconstrained; the fit says so with 1 instead of wherever the simplex wandered (a
// training run wrote 0, which the model file's reader refuses), and its predictions
// are the memory term's.
TEST(OperatorModel, AnUnusedTermIsOne) {
  auto c = ceilings();
  std::vector<OperatorSample> lookups;
  for (double bytes : {1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7})
    lookups.push_back({"embedding", "float64", "", 0, bytes, 2e-6 + bytes / (0.5 * c.bandwidth_for(bytes))});
  const auto m = fit_operator(c, lookups);
  EXPECT_EQ(m.e_compute, 1.0);
  EXPECT_NEAR(m.e_memory, 0.5, 0.02);
  EXPECT_LT(m.median_rel_error, 0.01);
}

TEST(OperatorModel, FasterThanACeilingIsFlagged) {
  auto c = ceilings();
  std::vector<OperatorSample> s{{"triad", "float64", "big", 2e6, 24e6, 24e6 / 150e9},  // 150 GB/s > 100
                                {"fma", "float64", "peak", 1e9, 0, 1e9 / 80e9},         // 80 GF > 50
                                {"triad", "float64", "ok", 2e6, 24e6, 24e6 / 11e9}};
  auto v = ceiling_violations(c, s);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].ceiling, "memory");
  EXPECT_NEAR(v[0].ratio, 1.5, 1e-9);
  EXPECT_EQ(v[1].ceiling, "compute");
}

// A kernel faster than a ceiling raises it to the kernel's rate (and says which); a
// slower one leaves every ceiling as measured.
TEST(OperatorModel, CeilingsRaisedToTheFastestKernel) {
  auto c = ceilings();
  const double peak = c.peak_for("float64");
  double top = 0;
  for (const auto& l : c.memory) top = std::max(top, l.bandwidth);
  std::vector<OperatorSample> slower{{"triad", "float64", "ok", 2e6, 24e6, 24e6 / (0.5 * top)},
                                     {"gemm", "float64", "ok", 1e9, 1e6, 1e9 / (0.9 * peak)}};
  EXPECT_TRUE(raise_ceilings(c, slower).empty());
  EXPECT_EQ(c.peak_for("float64"), peak);

  std::vector<OperatorSample> faster{{"gemm", "float64", "M=1", 1e9, 1e6, 1e9 / (1.2 * peak)},
                                     {"gemm", "float64", "M=2", 1e9, 1e6, 1e9 / (1.3 * peak)},
                                     {"triad", "float64", "big", 2e6, 24e6, 24e6 / (1.5 * top)}};
  auto raised = raise_ceilings(c, faster);
  ASSERT_EQ(raised.size(), 2u);
  EXPECT_NE(raised[0].find("peak_flops float64"), std::string::npos) << raised[0];
  EXPECT_NE(raised[0].find("M=2"), std::string::npos) << raised[0];  // the fastest kernel
  EXPECT_NE(raised[1].find("bandwidth"), std::string::npos) << raised[1];
  EXPECT_NEAR(c.peak_for("float64") / peak, 1.3, 1e-12);
  double new_top = 0;
  for (const auto& l : c.memory) new_top = std::max(new_top, l.bandwidth);
  EXPECT_NEAR(new_top / top, 1.5, 1e-12);
  // Against the raised ceilings nothing is faster: the fit's efficiencies stay <= 1.
  EXPECT_TRUE(ceiling_violations(c, faster, 1.0).empty());
}
