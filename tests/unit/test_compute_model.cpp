// ComputeModel end to end through real HDF5 files: a results file written in the compute
// suite's layout from a known machine (peak, a bandwidth staircase) and a known operator
// (e_compute, e_memory, t0) is fitted; the ceilings and the operator are recovered; the
// model file round-trips; predict() answers a measured shape with the measurement, an
// unmeasured one with the known operator's time, an unknown operator of a known family
// with the family's model, and anything else with the roofline bound.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/h5.hpp"
#include "core/schema.hpp"
#include "models/compute_model.hpp"
#include "models/model_file.hpp"

namespace {

using namespace sextant;
using sextant::model::ComputeModel;
using sextant::model::read_model_file;

std::string tmp_path(const std::string& name) { return std::string(SEXTANT_TEST_TMPDIR) + "/" + name; }

constexpr double peak64 = 80e9;                      // FLOP/s
constexpr double l1 = 48 * 1024, l2 = 2 * 1024 * 1024;  // cache sizes, bytes
double staircase(double ws) { return ws <= l1 ? 300e9 : ws <= l2 ? 100e9 : 20e9; }

// The known operator: t = max(F / (e_c peak), B / (e_m BW(B))) + t0.
constexpr double e_c = 0.6, e_m = 0.5, t0 = 4e-6;
double truth(double flops, double bytes) {
  return std::max(flops / (e_c * peak64), bytes / (e_m * staircase(bytes))) + t0;
}

struct Kernel {
  std::string name, family;
  std::vector<std::string> shapes;
  std::vector<double> flops, bytes, median;
};

void write_kernel(h5::Group& compute, const Kernel& k) {
  h5::Group g = compute.create_group("kernels").create_group(k.name).create_group("float64");
  g.set_attr("family", k.family);
  g.write("shape", k.shapes);
  g.write("flops", k.flops);
  g.write("bytes", k.bytes);
  g.write("median", k.median);
}

// A results file of the compute suite's layout (docs/file-formats.md) for the machine
// and operator above: peak_fma, a triad working-set sweep, and gemm at several shapes.
std::string write_results() {
  const std::string path = tmp_path("compute_model_results.h5");
  h5::File f(path, h5::File::Mode::create_truncate);
  Provenance p;
  p.ranks = 1;
  write_meta(f, results_schema, p);
  h5::Group compute = f.create_group("compute");
  compute.set_attr("threads", std::int64_t{1});
  compute.set_attr("cache_bytes", std::vector<double>{l1, l2});
  Kernel peak{"peak_fma", "peak", {"items=1,vectors=4", "items=1,vectors=8"}, {1e9, 1e9}, {0, 0},
              {1e9 / (0.9 * peak64), 1e9 / peak64}};  // the better accumulator count reaches the peak
  write_kernel(compute, peak);
  // Square shapes (compute-bound) and thin ones, K = 1..4 (memory-bound, C streamed
  // from each cache level and from DRAM): both efficiencies are identifiable.
  Kernel gemm{"gemm", "gemm", {}, {}, {}, {}};
  auto add = [&](double m, double n, double k) {
    const double flops = 2 * m * n * k, bytes = (m * k + k * n + m * n) * 8;
    gemm.shapes.push_back("M=" + std::to_string(int(m)) + ",N=" + std::to_string(int(n)) + ",K=" +
                          std::to_string(int(k)) + ",ta=0,tb=0");
    gemm.flops.push_back(flops);
    gemm.bytes.push_back(bytes);
    gemm.median.push_back(truth(flops, bytes));
  };
  for (double n : {32.0, 64.0, 128.0, 256.0, 512.0, 1024.0}) add(n, n, n);
  for (double n : {48.0, 256.0, 2048.0})
    for (double k : {1.0, 4.0}) add(n, n, k);
  write_kernel(compute, gemm);
  h5::Group sweep = compute.create_group("sweep").create_group("triad").create_group("float64");
  std::vector<double> ws, bw;
  for (double w = 8 * 1024; w <= 1024.0 * 1024 * 1024; w *= 2) {
    ws.push_back(w);
    bw.push_back(staircase(w));
  }
  sweep.write("working_set", ws);
  sweep.write("bandwidth", bw);
  return path;
}

TEST(ComputeModel, FitRecoversTheMachineAndTheOperator) {
  const auto m = ComputeModel::fit_results(write_results());
  EXPECT_DOUBLE_EQ(m.ceilings.peak_flops.at("float64"), peak64);
  EXPECT_EQ(m.peak_shape.at("float64"), "items=1,vectors=8");
  ASSERT_EQ(m.ceilings.memory.size(), 3u);
  EXPECT_NEAR(m.ceilings.memory[0].bandwidth, 300e9, 1e6);
  EXPECT_NEAR(m.ceilings.memory[1].bandwidth, 100e9, 1e6);
  EXPECT_NEAR(m.ceilings.memory[2].bandwidth, 20e9, 1e6);
  EXPECT_EQ(m.ceilings.memory[0].name, "L1");
  EXPECT_EQ(m.ceilings.memory[2].name, "DRAM");
  EXPECT_TRUE(m.violations.empty());
  const auto* op = m.find("gemm", "float64");
  ASSERT_NE(op, nullptr);
  // Noise-free data from the model's own form: recovered to the optimiser's tolerance.
  EXPECT_NEAR(op->e_compute, e_c, 0.01 * e_c);
  EXPECT_NEAR(op->e_memory, e_m, 0.05 * e_m);
  EXPECT_NEAR(op->t0, t0, 0.05 * t0);
  EXPECT_LT(op->median_rel_error, 0.01);
  EXPECT_NE(m.find("family:gemm", "float64"), nullptr);
}

TEST(ComputeModel, ModelFileRoundTrips) {
  const auto fitted = ComputeModel::fit_results(write_results());
  const std::string path = tmp_path("compute_model.model.h5");
  {
    h5::File f(path, h5::File::Mode::create_truncate);
    Provenance p;
    p.ranks = 1;
    write_meta(f, model_schema, p);
    fitted.write_into(f);
  }
  const auto read = read_model_file(path).compute;
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->ceilings.peak_flops, fitted.ceilings.peak_flops);
  ASSERT_EQ(read->ceilings.memory.size(), fitted.ceilings.memory.size());
  for (std::size_t i = 0; i < fitted.ceilings.memory.size(); ++i) {
    EXPECT_EQ(read->ceilings.memory[i].name, fitted.ceilings.memory[i].name);
    EXPECT_EQ(read->ceilings.memory[i].bandwidth, fitted.ceilings.memory[i].bandwidth);
    EXPECT_EQ(read->ceilings.memory[i].lo_bytes, fitted.ceilings.memory[i].lo_bytes);
  }
  ASSERT_EQ(read->operators.size(), fitted.operators.size());
  const auto *a = read->find("gemm", "float64"), *b = fitted.find("gemm", "float64");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->e_compute, b->e_compute);
  EXPECT_EQ(a->e_memory, b->e_memory);
  EXPECT_EQ(a->t0, b->t0);
  EXPECT_EQ(read->points.size(), fitted.points.size());
  EXPECT_EQ(read->threads, 1);
}

TEST(ComputeModel, PredictMeasuredModelledFamilyAndBound) {
  const auto m = ComputeModel::fit_results(write_results());
  // A measured shape: the measurement.
  const double f256 = 2.0 * 256 * 256 * 256, b256 = 3.0 * 256 * 256 * 8;
  auto e = m.predict("gemm", "float64", f256, b256, "gemm", "M=256,N=256,K=256,ta=0,tb=0");
  EXPECT_EQ(e.model, "measured");
  EXPECT_DOUBLE_EQ(e.seconds, truth(f256, b256));
  // An unmeasured shape: the operator model, which is the truth here.
  const double f = 2.0 * 700 * 700 * 700, b = 3.0 * 700 * 700 * 8;
  e = m.predict("gemm", "float64", f, b, "gemm", "M=700,N=700,K=700,ta=0,tb=0");
  EXPECT_TRUE(e.calibrated);
  EXPECT_EQ(e.model, "gemm[ta=0,tb=0]");  // the variant's model (transposes cost differently)
  EXPECT_NEAR(e.seconds, truth(f, b), 0.01 * truth(f, b));
  EXPECT_EQ(e.bound, "compute");
  // An operator the suite did not measure, of a family it did: the family's model.
  e = m.predict("gemm_something", "float64", f, b, "gemm");
  EXPECT_EQ(e.model, "family:gemm");
  EXPECT_NEAR(e.seconds, truth(f, b), 0.01 * truth(f, b));
  // Nothing known: the roofline bound, efficiency 1 (memory-bound here: 64 MiB moved).
  const double fb = 1e6, bb = 64.0 * 1024 * 1024;
  e = m.predict("mystery", "float64", fb, bb, "mystery");
  EXPECT_FALSE(e.calibrated);
  EXPECT_EQ(e.bound, "memory");
  EXPECT_DOUBLE_EQ(e.seconds, std::max(fb / peak64, bb / 20e9));
}

}  // namespace
