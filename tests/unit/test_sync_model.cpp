// Tests of the partners' wait (models/sync_model.hpp): the expected maximum of normal
// samples against its closed forms, the interpolation of the measured curve, and the
// step predictor adding excess(T) T at each blocking collective, T worked out by hand.
#include "models/sync_model.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "models/step_predictor.hpp"

namespace {

using namespace sextant::model;

TEST(SyncModel, ExpectedMaximumOfNormalSamples) {
  const double pi = std::acos(-1.0);
  EXPECT_DOUBLE_EQ(expected_normal_maximum(1), 0);
  EXPECT_NEAR(expected_normal_maximum(2), 1 / std::sqrt(pi), 1e-9);                    // closed form
  EXPECT_NEAR(expected_normal_maximum(3), 1.5 / std::sqrt(pi), 1e-9);                  // closed form
  EXPECT_NEAR(expected_normal_maximum(4), 3 / std::sqrt(pi) * (0.5 + std::asin(1 / 3.0) / pi), 1e-9);
  EXPECT_GT(expected_normal_maximum(64), expected_normal_maximum(16));
}

TEST(SyncModel, WaitInterpolatesInLogIntervalAndScalesWithTheGroup) {
  SyncModel s;
  s.ranks = 2;
  s.interval_s = {1e-3, 4e-3};
  s.excess = {0.10, 0.04};
  EXPECT_DOUBLE_EQ(s.wait(1e-3, 2), 1e-4);
  EXPECT_NEAR(s.wait(2e-3, 2), 0.07 * 2e-3, 1e-15);  // halfway in log: 0.07
  EXPECT_DOUBLE_EQ(s.wait(1e-4, 2), 0.10 * 1e-4);    // the nearest share outside
  EXPECT_DOUBLE_EQ(s.wait(1e-1, 2), 0.04 * 1e-1);
  EXPECT_DOUBLE_EQ(s.wait(1e-3, 1), 0);               // nobody to wait for
  EXPECT_NEAR(s.wait(1e-3, 4), 1e-4 * expected_normal_maximum(4) / expected_normal_maximum(2), 1e-15);
}

TEST(SyncModel, MessageOverheadInterpolatesLinearlyInBytes) {
  SyncModel s;
  EXPECT_DOUBLE_EQ(s.overhead(4096), 0);  // none measured
  s.message_bytes = {1000, 3000};
  s.message_overhead = {10e-6, 30e-6};
  EXPECT_DOUBLE_EQ(s.overhead(1000), 10e-6);
  EXPECT_NEAR(s.overhead(2000), 20e-6, 1e-18);
  EXPECT_DOUBLE_EQ(s.overhead(10), 10e-6);  // the nearest outside
  EXPECT_DOUBLE_EQ(s.overhead(1e6), 30e-6);
  EXPECT_DOUBLE_EQ(s.overhead(0), 0);  // no message
  s.message_overhead = {-2e-6, 30e-6};  // a difference of two times: a free message can measure below 0
  EXPECT_DOUBLE_EQ(s.overhead(1000), 0);
  EXPECT_NEAR(s.overhead(2000), 14e-6, 1e-18);
}

TEST(SyncModel, ThePredictorAddsTheWaitAtEachCollective) {
  // One stage, one micro-batch, tp 2. Forward: a (1 ms), b (2 ms) then its allreduce,
  // c (0.5 ms). The allreduce follows b: 3 ms of work since the phase began, plus the
  // phase's tail c (the phase repeats): 3.5 ms; excess 10% -> 0.35 ms on top of the
  // collective's own time (20 us: one Hockney line).
  StepPlan plan;
  plan.config.micro_batch = 1;
  plan.config.global_batch = 1;
  plan.config.tp = 2;
  StagePlan st;
  for (auto [name, seconds] : {std::pair{"a", 1e-3}, {"b", 2e-3}, {"c", 0.5e-3}}) {
    ComputeOp op;
    op.name = name, op.kernel = "k", op.family = "stream", op.shape = std::string("n=") + name, op.bytes = 1;
    st.forward.compute.push_back(op);
  }
  st.forward.comm.push_back({"b.tp_allreduce", Traffic::tp, "allreduce", 1024, 2});
  plan.stages.push_back(st);
  ComputeModel compute;
  compute.ceilings.peak_flops["float32"] = 1e12;
  compute.ceilings.memory = {{"DRAM", 1, 1e12, 1e10, 4}};
  for (auto [name, seconds] : {std::pair{"a", 1e-3}, {"b", 2e-3}, {"c", 0.5e-3}})
    compute.points.push_back({"k", "stream", "float32", std::string("n=") + name, 0, 1, seconds, 0});
  CommModel comm;
  CommFit f;
  f.benchmark = "allreduce", f.level = "world", f.dtype = "float32", f.ranks = 2;
  Segment line;
  line.lo_bytes = 1, line.hi_bytes = 1e9, line.alpha = 20e-6, line.beta = 0, line.points = 10;
  f.fit.segments.push_back(line);
  f.bytes_min = line.lo_bytes, f.bytes_max = line.hi_bytes;
  comm.fits.push_back(f);
  SyncModel sync;
  sync.ranks = 2, sync.interval_s = {1e-3}, sync.excess = {0.10};
  const auto without = predict_step(plan, comm, compute, {}, nullptr);
  const auto with = predict_step(plan, comm, compute, {}, &sync);
  EXPECT_NEAR(without.stages[0].forward_tp, 20e-6, 1e-12);
  EXPECT_NEAR(with.stages[0].forward_tp - without.stages[0].forward_tp, 0.35e-3, 1e-12);
  EXPECT_NEAR(with.total - without.total, 0.35e-3, 1e-12);
}

}  // namespace
