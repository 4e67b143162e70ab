// Tests of CommModel (models/comm_model.hpp) on synthetic results files written
// with the real schema and the layout of suites/comm/harness.cpp write_results().
#include "models/comm_model.hpp"
#include "models/model_file.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/h5.hpp"
#include "core/schema.hpp"

namespace {

namespace h5 = sextant::h5;
using sextant::model::CommFit;
using sextant::model::CommModel;
using sextant::model::fit_model_file;
using sextant::model::read_model_file;
using sextant::model::write_model_file;

constexpr double KiB = 1024, MiB = 1024 * KiB;

std::string tmp_path(const std::string& name) { return std::string(SEXTANT_TEST_TMPDIR) + "/comm_model_" + name; }

// Known truth: eager 0.5 us + n / 5 GB/s up to 32 KiB, rendezvous 12 us + n / 10 GB/s above.
double pingpong_time(double n) { return n <= 32 * KiB ? 0.5e-6 + n / 5e9 : 12e-6 + n / 10e9; }
double bandwidth_message_time(double n) { return 2e-6 + n / 8e9; }
double allreduce_time(double n) { return 5e-6 + n / 4e9; }

struct Bench {
  std::string level, name, dtype;
  int ranks, window = 1;
  double busbw_factor = 1;
  bool oversubscribed = false;
  std::function<double(double)> time;  // one operation (one message for windowed ones)
};

// One comm/<level>/<name>/<dtype> group as write_results() lays it out. Sizes 1 B ..
// 16 MiB in powers of two, 1% deterministic noise; the 1-byte size is marked invalid
// and given an absurd time, which the fit must ignore.
void write_bench(h5::File& f, const Bench& b) {
  h5::Group g = f.create_group("comm").create_group(b.level).create_group(b.name).create_group(b.dtype).create_group("p" + std::to_string(b.ranks));
  g.set_attr("ranks", std::int64_t{b.ranks});
  g.set_attr("oversubscribed", std::int64_t{b.oversubscribed});
  g.set_attr("busbw_factor", b.busbw_factor);
  g.set_attr("window", std::int64_t{b.window});
  std::vector<std::int64_t> bytes, valid;
  std::vector<double> median, data_bytes;
  for (int k = 0; k <= 24; ++k) {
    double n = std::ldexp(1.0, k);
    bytes.push_back(static_cast<std::int64_t>(n));
    valid.push_back(k == 0 ? 0 : 50);
    median.push_back(k == 0 ? 1.0 : b.window * b.time(n) * (1 + 0.01 * std::sin(2.3 * k)));
    data_bytes.push_back(n * b.window);
  }
  g.write("bytes", bytes);
  g.write("median", median);
  g.write("data_bytes", data_bytes);
  g.write("valid", valid);
  g.create_group("samples");  // present in real files; must not be taken for a dtype
}

sextant::Provenance provenance() {
  sextant::Provenance p;
  p.fields = {{"host", "synthetic"}, {"mpi_library", "none"}};
  p.environment = {{"UCX_TLS", "rc"}};
  p.ranks = 4;
  return p;
}

std::string write_results(const std::string& name, const std::vector<Bench>& benches) {
  auto path = tmp_path(name);
  h5::File f(path, h5::File::Mode::create_truncate);
  sextant::write_meta(f, sextant::results_schema, provenance());
  for (const auto& b : benches) write_bench(f, b);
  return path;
}

std::string standard_results() {
  return write_results("results.h5", {{"world", "pingpong", "byte", 2, 1, 1.0, false, pingpong_time},
                                      {"world", "bandwidth", "byte", 2, 64, 1.0, false, bandwidth_message_time},
                                      {"node", "allreduce", "float32", 4, 1, 1.5, true, allreduce_time}});
}

const CommFit& fit_of(const CommModel& m, const std::string& bench) {
  for (const auto& f : m.fits)
    if (f.benchmark == bench) return f;
  throw std::runtime_error("no fit for " + bench);
}

TEST(CommModel, RecoversPiecewiseHockneyParameters) {
  const auto file = fit_model_file(standard_results(), {.comm = true, .compute = false});
  ASSERT_TRUE(file.comm.has_value());
  EXPECT_FALSE(file.compute.has_value());
  const CommModel& m = *file.comm;
  ASSERT_EQ(m.fits.size(), 3u);
  EXPECT_EQ(file.source.fields, provenance().fields);
  EXPECT_EQ(file.source.ranks, 4);

  const CommFit& pp = fit_of(m, "pingpong");
  EXPECT_EQ(pp.level, "world");
  EXPECT_EQ(pp.dtype, "byte");
  EXPECT_EQ(pp.ranks, 2);
  EXPECT_EQ(pp.bytes_min, 2.0);  // the invalid 1-byte size is not fitted
  EXPECT_EQ(pp.bytes_max, 16 * MiB);
  ASSERT_EQ(pp.fit.segments.size(), 2u);
  const auto& eager = pp.fit.segments[0];
  const auto& rndv = pp.fit.segments[1];
  EXPECT_EQ(eager.hi_bytes, 32 * KiB);  // the breakpoint
  EXPECT_EQ(rndv.lo_bytes, 64 * KiB);
  EXPECT_NEAR(eager.alpha, 0.5e-6, 0.05e-6);
  EXPECT_NEAR(1 / eager.beta, 5e9, 0.05 * 5e9);
  EXPECT_NEAR(rndv.alpha, 12e-6, 1.2e-6);
  EXPECT_NEAR(1 / rndv.beta, 10e9, 0.05 * 10e9);

  const CommFit& ar = fit_of(m, "allreduce");
  EXPECT_EQ(ar.level, "node");
  EXPECT_EQ(ar.dtype, "float32");
  EXPECT_EQ(ar.ranks, 4);
  EXPECT_TRUE(ar.oversubscribed);
  EXPECT_FALSE(pp.oversubscribed);
  EXPECT_EQ(ar.busbw_factor, 1.5);
  EXPECT_EQ(ar.fit.segments.size(), 1u);
}

TEST(CommModel, WindowedBenchmarkIsModelledPerMessage) {
  auto m = CommModel::fit_results(standard_results());
  const CommFit& bw = fit_of(m, "bandwidth");
  ASSERT_EQ(bw.fit.segments.size(), 1u);
  EXPECT_NEAR(bw.fit.segments[0].alpha, 2e-6, 0.2e-6);
  EXPECT_NEAR(1 / bw.fit.segments[0].beta, 8e9, 0.05 * 8e9);
  EXPECT_DOUBLE_EQ(bw.data_bytes_per_byte, 1.0);  // data_bytes counts the window too
  auto p = m.predict("bandwidth", 1 * MiB, 2);
  EXPECT_NEAR(p.seconds, bandwidth_message_time(MiB), 0.03 * bandwidth_message_time(MiB));
}

TEST(CommModel, PredictionsAndExtrapolationFlags) {
  auto m = CommModel::fit_results(standard_results());
  for (double n : {64.0, 4 * KiB, 256 * KiB, 8 * MiB}) {
    auto p = m.predict("pingpong", n, 2);  // byte fits serve any requested dtype
    EXPECT_NEAR(p.seconds, pingpong_time(n), 0.05 * pingpong_time(n)) << n;
    EXPECT_FALSE(p.extrapolated_bytes) << n;
    EXPECT_FALSE(p.extrapolated_ranks) << n;
    EXPECT_LE(p.lo, p.seconds);
    EXPECT_GE(p.hi, p.seconds);
    EXPECT_DOUBLE_EQ(p.seconds, p.alpha_part + p.beta_part);
    EXPECT_DOUBLE_EQ(p.busbw, n / p.seconds);
  }
  EXPECT_EQ(m.predict("pingpong", 1 * KiB, 2).segment, 0u);
  EXPECT_EQ(m.predict("pingpong", 1 * MiB, 2).segment, 1u);
  EXPECT_TRUE(m.predict("pingpong", 64 * MiB, 2).extrapolated_bytes);
  EXPECT_TRUE(m.predict("pingpong", 1, 2).extrapolated_bytes);
  auto other = m.predict("pingpong", 1 * KiB, 16);
  EXPECT_TRUE(other.extrapolated_ranks);
  EXPECT_FALSE(other.extrapolated_bytes);
  EXPECT_FALSE(other.note.empty());

  auto ar = m.predict("allreduce", 1 * MiB, 4, "node", "float32");
  EXPECT_DOUBLE_EQ(ar.busbw, MiB / ar.seconds * 1.5);
}

// At 2 ranks the ring, recursive doubling and Bruck allgathers all take one step of
// n/2: the fit cannot tell them apart. At 4 ranks they part ways (3 steps, 2, 2): the
// prediction takes the cheapest, as an MPI library would run.
TEST(CommModel, IndistinguishableAlgorithmsPartWaysAtOtherRankCounts) {
  const auto allgather2 = [](double n) { return pingpong_time(n / 2); };
  auto m = CommModel::fit_results(write_results(
      "ties.h5", {{"world", "pingpong", "byte", 2, 1, 1.0, false, pingpong_time},
                  {"world", "allgather", "float32", 2, 1, 0.5, false, allgather2}}));
  const double n = 64;  // small: latency-bound
  auto p = m.predict("allgather", n, 4, "world", "float32");
  EXPECT_EQ(p.view, sextant::model::View::algorithm);
  EXPECT_EQ(p.algorithm, "recursive_doubling");
  // Two steps (n/4, then n/2 bytes) against the ring's three of n/4, within the fit's
  // calibration (the sin noise of the synthetic data, 1%).
  const double two_steps = pingpong_time(n / 4) + pingpong_time(n / 2), ring = 3 * pingpong_time(n / 4);
  EXPECT_NEAR(p.seconds, two_steps, 0.05 * two_steps);
  EXPECT_LT(p.seconds, 0.8 * ring);
  EXPECT_NE(p.note.find("indistinguishable"), std::string::npos) << p.note;
}

// MPI libraries choose, and fold their algorithms, by whether p is a power of two. An
// allreduce that is recursive doubling at 3 ranks and Rabenseifner's at 4 (forced runs
// beside each, as `run --algorithms` measures them) is predicted recursive doubling at
// 6 and Rabenseifner's at 8. A bcast that is binomial at 3 and scatter + allgather at 4
// (at 3 the forced scatter + allgather is the library's own binomial, MPICH's fallback)
// likewise, and the forced one at 6 is the library's choice there.
TEST(CommModel, OtherRankCountsTakeTheChoiceOfTheirKind) {
  using sextant::model::find_algorithm;
  static sextant::model::PiecewiseFit truth;
  truth.segments = {sextant::model::Segment{}, sextant::model::Segment{}};
  truth.segments[0].hi_bytes = 32 * KiB, truth.segments[0].alpha = 0.5e-6, truth.segments[0].beta = 1 / 5e9;
  truth.segments[1].lo_bytes = 32 * KiB, truth.segments[1].hi_bytes = 1e12;
  truth.segments[1].alpha = 12e-6, truth.segments[1].beta = 1 / 10e9;
  auto cost = [](const char* op, const char* alg, int p) -> std::function<double(double)> {
    return [op, alg, p](double n) { return find_algorithm(op, alg)->cost({&truth, 0}, n, p).total(); };
  };
  auto bcast = [&](const char* alg, int p) { return cost("bcast", alg, p); };
  auto allreduce = [&](const char* alg, int p) { return cost("allreduce", alg, p); };
  const std::string srda = "bcast@sched_scatter_recursive_doubling_allgather";
  auto m = CommModel::fit_results(write_results(
      "kinds.h5", {{"world", "pingpong", "byte", 2, 1, 1.0, false, pingpong_time},
                   {"world", "bcast", "float32", 3, 1, 1.0, false, bcast("binomial", 3)},
                   {"world", "bcast@sched_binomial", "float32", 3, 1, 1.0, false, bcast("binomial", 3)},
                   {"world", srda, "float32", 3, 1, 1.0, false, bcast("binomial", 3)},
                   {"world", "bcast", "float32", 4, 1, 1.0, false, bcast("scatter_allgather", 4)},
                   {"world", "bcast@sched_binomial", "float32", 4, 1, 1.0, false, bcast("binomial", 4)},
                   {"world", srda, "float32", 4, 1, 1.0, false, bcast("scatter_allgather", 4)},
                   {"world", "allreduce", "float32", 3, 1, 2.0, false, allreduce("recursive_doubling", 3)},
                   {"world", "allreduce@sched_recursive_doubling", "float32", 3, 1, 2.0, false, allreduce("recursive_doubling", 3)},
                   {"world", "allreduce@sched_reduce_scatter_allgather", "float32", 3, 1, 2.0, false, allreduce("rabenseifner", 3)},
                   {"world", "allreduce", "float32", 4, 1, 2.0, false, allreduce("rabenseifner", 4)},
                   {"world", "allreduce@sched_recursive_doubling", "float32", 4, 1, 2.0, false, allreduce("recursive_doubling", 4)},
                   {"world", "allreduce@sched_reduce_scatter_allgather", "float32", 4, 1, 2.0, false, allreduce("rabenseifner", 4)}}));
  const double n = 256 * KiB;
  EXPECT_EQ(m.predict("allreduce", n, 6, "world", "float32").algorithm, "recursive_doubling");
  EXPECT_EQ(m.predict("allreduce", n, 8, "world", "float32").algorithm, "rabenseifner");
  auto at6 = m.predict("bcast", n, 6, "world", "float32");
  EXPECT_EQ(at6.algorithm, "binomial") << at6.note;
  EXPECT_NEAR(at6.seconds, bcast("binomial", 6)(n), 0.05 * at6.seconds);
  auto at8 = m.predict("bcast", n, 8, "world", "float32");
  EXPECT_EQ(at8.algorithm, "scatter_allgather") << at8.note;
  EXPECT_NEAR(at8.seconds, bcast("scatter_allgather", 8)(n), 0.05 * at8.seconds);
  auto forced6 = m.predict(srda, n, 6, "world", "float32");
  EXPECT_DOUBLE_EQ(forced6.seconds, at6.seconds);
  EXPECT_NE(forced6.note.find("does not run at 6 ranks"), std::string::npos) << forced6.note;
  // Its runs at 3 ranks measured the library's choice: they are no view of their own.
  for (const auto& a : m.algorithms) EXPECT_FALSE(a.benchmark == srda && a.ranks == 3);
}

// A one-segment point-to-point link of known alpha and bandwidth, and the cost formulas
// of the collective algorithms on it: the truth that synthetic forced runs are made of.
struct KnownLink {
  sextant::model::PiecewiseFit fit;
  KnownLink(double alpha, double bandwidth) {
    fit.segments = {sextant::model::Segment{}};
    fit.segments[0].hi_bytes = 1e12, fit.segments[0].alpha = alpha, fit.segments[0].beta = 1 / bandwidth;
  }
  double pingpong(double n) const { return fit.segments[0].alpha + n * fit.segments[0].beta; }
  double cost(const char* op, const char* alg, int p, double n) const {
    return sextant::model::find_algorithm(op, alg)->cost({&fit, 0}, n, p).total();
  }
};

// At 3 ranks a ring and a recursive-doubling allgather both take two steps of n/3: their
// formulas agree, so the 6% by which the forced runs differ there (what each
// implementation adds) cannot say which one the library's choice, measured as the ring,
// runs at 5 ranks. Both stay candidates, and the prediction at 5 takes the cheaper: three
// steps (recursive doubling, Bruck), not the ring's four.
TEST(CommModel, AlgorithmsWhoseFormulasAgreeStayCandidates) {
  const KnownLink link(20e-6, 5e9);
  auto cost = [&](const char* alg, int p, double n) { return link.cost("allgather", alg, p, n); };
  auto ring3 = [&](double n) { return 0.97 * cost("ring", 3, n); };
  auto m = CommModel::fit_results(write_results(
      "agree.h5", {{"world", "pingpong", "byte", 2, 1, 1.0, false, [&](double n) { return link.pingpong(n); }},
                   {"world", "allgather", "float32", 3, 1, 2.0 / 3, false, ring3},
                   {"world", "allgather@tsp_ring", "float32", 3, 1, 2.0 / 3, false, ring3},
                   {"world", "allgather@sched_recursive_doubling", "float32", 3, 1, 2.0 / 3, false,
                    [&](double n) { return 1.03 * cost("recursive_doubling", 3, n); }}}));
  for (double n : {64.0, 4 * KiB}) {
    auto p = m.predict("allgather", n, 5, "world", "float32");
    EXPECT_EQ(p.algorithm, "recursive_doubling") << n << ": " << p.note;
    const double want = 0.97 * cost("recursive_doubling", 5, n);
    EXPECT_NEAR(p.seconds, want, 0.03 * want) << n;
  }
}

// Forced runs measured alike at the fitted p can have different formulas there: MPICH
// runs recursive doubling when asked for Rabenseifner's allreduce of fewer elements than
// the power of two. When the prediction at another p swaps one for the other, the
// calibration is measured / the formula it uses, not the other's (0.52 at 8 B before).
TEST(CommModel, ASwappedAlgorithmKeepsItsOwnCalibration) {
  const KnownLink link(0.5e-6, 5e9);
  auto cost = [&](const char* alg, int p, double n) { return link.cost("allreduce", alg, p, n); };
  // Below 16 B (4 floats) the forced Rabenseifner run is recursive doubling, and the
  // library's choice is nearest to it there; above, its own formula.
  auto library = [&](double n) { return n < 16 ? 0.99 * cost("recursive_doubling", 4, n) : cost("recursive_doubling", 4, n); };
  auto forced_rabenseifner = [&](double n) {
    return n < 16 ? 0.99 * cost("recursive_doubling", 4, n) : cost("rabenseifner", 4, n);
  };
  auto m = CommModel::fit_results(write_results(
      "swap.h5", {{"world", "pingpong", "byte", 2, 1, 1.0, false, [&](double n) { return link.pingpong(n); }},
                  {"world", "allreduce", "float32", 4, 1, 1.5, false, library},
                  {"world", "allreduce@sched_recursive_doubling", "float32", 4, 1, 1.5, false,
                   [&](double n) { return cost("recursive_doubling", 4, n); }},
                  {"world", "allreduce@sched_reduce_scatter_allgather", "float32", 4, 1, 1.5, false, forced_rabenseifner}}));
  for (double n : {2.0, 4.0, 8.0}) {
    const double want = 0.99 * cost("recursive_doubling", 8, n);
    EXPECT_NEAR(m.predict("allreduce", n, 8, "world", "float32").seconds, want, 0.03 * want) << n;
  }
}

TEST(CommModel, UnknownOperationListsWhatTheModelHas) {
  auto m = CommModel::fit_results(standard_results());
  try {
    m.predict("alltoall", 1024, 2);
    ADD_FAILURE() << "alltoall predicted";
  } catch (const sextant::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("alltoall"), std::string::npos) << msg;
    for (const char* have : {"pingpong@world/byte", "bandwidth@world/byte", "allreduce@node/float32"})
      EXPECT_NE(msg.find(have), std::string::npos) << msg;
  }
  EXPECT_THROW(m.predict("pingpong", 1024, 2, "node"), sextant::Error);                 // other level
  EXPECT_THROW(m.predict("allreduce", 1024, 4, "node", "float64"), sextant::Error);  // other dtype
}

TEST(CommModel, ModelFileRoundTrip) {
  auto results = standard_results();
  const auto file = fit_model_file(results);
  const CommModel& m = *file.comm;
  auto path = tmp_path("model.h5");
  sextant::Provenance fitter;
  fitter.fields = {{"host", "fitter"}};
  write_model_file(path, fitter, file);
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  write_model_file(path, fitter, file);  // replacing an existing model works too
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  const auto back_file = read_model_file(path);
  ASSERT_TRUE(back_file.comm.has_value());
  EXPECT_FALSE(back_file.compute.has_value());  // a part the file lacks
  const CommModel& back = *back_file.comm;
  EXPECT_EQ(back_file.source_file, results);
  EXPECT_EQ(back_file.source.ranks, file.source.ranks);
  EXPECT_EQ(back_file.source.environment, file.source.environment);
  for (const auto& [k, v] : file.source.fields) EXPECT_EQ(back_file.source.fields.at(k), v) << k;
  ASSERT_EQ(back.fits.size(), m.fits.size());
  for (const auto& f : m.fits) {
    const CommFit& g = fit_of(back, f.benchmark);
    EXPECT_EQ(g.level, f.level);
    EXPECT_EQ(g.dtype, f.dtype);
    EXPECT_EQ(g.ranks, f.ranks);
    EXPECT_EQ(g.oversubscribed, f.oversubscribed);
    EXPECT_EQ(g.busbw_factor, f.busbw_factor);
    EXPECT_EQ(g.bytes_min, f.bytes_min);
    EXPECT_EQ(g.bytes_max, f.bytes_max);
    ASSERT_EQ(g.fit.segments.size(), f.fit.segments.size());
    for (double n : {2.0, 3000.0, 32 * KiB, 100 * KiB, 16 * MiB, 1e9}) {
      auto a = m.predict(f.benchmark, n, f.ranks, f.level, f.dtype);
      auto b = back.predict(f.benchmark, n, f.ranks, f.level, f.dtype);
      EXPECT_EQ(a.seconds, b.seconds) << f.benchmark << " " << n;
      EXPECT_EQ(a.lo, b.lo);
      EXPECT_EQ(a.hi, b.hi);
      EXPECT_EQ(a.busbw, b.busbw);
      EXPECT_EQ(a.segment, b.segment);
    }
  }
  // The model file is of the model schema; the results file is not.
  EXPECT_THROW(read_model_file(results), sextant::Error);
}

void expect_fit_rejected(const std::string& path) {
  try {
    CommModel::fit_results(path);
    ADD_FAILURE() << path << " was fitted";
  } catch (const sextant::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

// Window mode stores a size whose starts were nearly all late as missing: a NaN median,
// the few starts that were on time still counted in `valid`, and the reason beside it.
// The fit leaves it out; a NaN median with no reason is still a corrupt file.
TEST(CommModel, SizesStoredAsNotMeasuredAreLeftOut) {
  const Bench pingpong{"world", "pingpong", "byte", 2, 1, 1.0, false, pingpong_time};
  auto path = write_results("unmeasured.h5", {pingpong});
  const auto mark = [&](bool with_reason) {
    h5::File f(path, h5::File::Mode::read_write);
    h5::Group g = f.group("comm").group("world").group("pingpong").group("byte").group("p2");
    auto median = g.dataset("median").read_doubles();
    std::vector<std::int64_t> valid(median.size(), 50);
    valid[0] = 0;
    median[12] = std::nan("");
    valid[12] = 1;
    g.write("median", median);
    g.write("valid", valid);
    std::vector<std::string> reasons(median.size());
    if (with_reason) reasons[12] = "1 of 10 starts on time in window mode (3 attempts, window widened to 0.015 s)";
    g.write("unmeasured", reasons);
  };
  mark(true);
  const auto groups = sextant::model::read_comm_results(path);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].unmeasured, 2u);  // the 1-byte size (no valid repetition) and this one
  EXPECT_EQ(groups[0].points.size(), 23u);
  for (const auto& m : groups[0].points) EXPECT_NE(m.bytes, 4096.0);
  const auto model = fit_model_file(path);
  EXPECT_NEAR(model.comm->predict("pingpong", 4096, 2, "world", "byte").seconds, pingpong_time(4096),
              0.05 * pingpong_time(4096));
  mark(false);
  expect_fit_rejected(path);
}

TEST(CommModel, FitRejectsFilesWithNothingToFit) {
  auto model_path = tmp_path("not_results.h5");
  write_model_file(model_path, {}, fit_model_file(standard_results()));
  expect_fit_rejected(model_path);
  expect_fit_rejected(write_results("no_comm.h5", {}));
  // Too few usable sizes: every size marked invalid.
  auto invalid = write_results("all_invalid.h5", {{"world", "pingpong", "byte", 2, 1, 1.0, false, pingpong_time}});
  {
    h5::File f(invalid, h5::File::Mode::read_write);
    f.group("comm").group("world").group("pingpong").group("byte").group("p2").write("valid", std::vector<std::int64_t>(25, 0));
  }
  expect_fit_rejected(invalid);
  expect_fit_rejected(tmp_path("absent.h5"));
}

}  // namespace
