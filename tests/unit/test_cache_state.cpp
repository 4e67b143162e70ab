// Tests of the cache model (models/cache_state.hpp) on steps small enough to walk by
// hand: the expected shares are worked out in the comments from the rule "of a tensor of
// b bytes at depth d (the distinct bytes touched since its last use) the share
// kept(d + b / 2) is still cached", over the second of two steps. And the step
// predictor's use of it: an operator measured hot and cold is costed between the two by
// exactly that weight.
#include "models/cache_state.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "models/step_predictor.hpp"

namespace {

using namespace sextant::model;

ComputeOp op(const std::string& name, std::initializer_list<Operand> operands) {
  ComputeOp o;
  o.name = name;
  o.kernel = "stream_copy";
  o.family = "stream";
  o.shape = "n=" + name;
  o.operands = operands;
  return o;
}

// One stage; micro_batches micro-batches of one sequence each.
// Everything kept up to c bytes of reuse distance, nothing from c + 1.
CacheRetention up_to(double c) { return {{c, c + 1}, {1, 0}}; }

StepPlan one_stage(int micro_batches, Schedule schedule, std::vector<ComputeOp> forward, std::vector<ComputeOp> backward) {
  StepPlan plan;
  plan.config.micro_batch = 1;
  plan.config.global_batch = micro_batches;
  plan.config.schedule = schedule;
  StagePlan st;
  st.forward.compute = std::move(forward);
  st.backward.compute = std::move(backward);
  plan.stages.push_back(std::move(st));
  return plan;
}

// The step of SharesOfAStepWorkedByHand: f1 {A 60, B 60}, f2 {B 60, C 60}, f3 {A 60}.
StepPlan hand_worked_step() {
  return one_stage(1, Schedule::one_f_one_b,
                   {op("f1", {{"A", 60}, {"B", 60}}), op("f2", {{"B", 60}, {"C", 60}}), op("f3", {{"A", 60}})}, {});
}

// A compute model with f3 measured at these (seconds, flush bytes) points, 0 flushed = hot.
ComputeModel measuring_f3(std::initializer_list<std::pair<double, double>> measured, double operand_bytes) {
  ComputeModel compute;
  compute.ceilings.peak_flops["float32"] = 1e12;
  compute.ceilings.memory = {{"L1", 1, 100, 1e12, 4}, {"DRAM", 400, 1e12, 1e10, 4}};
  for (const auto& [seconds, flush] : measured)
    compute.points.push_back({"stream_copy", "stream", "float32", "n=f3", 0, operand_bytes, seconds, flush});
  return compute;
}

TEST(CacheState, RetentionIsLinearInLogDistance) {
  const CacheRetention r{{100, 400}, {1, 0}};
  EXPECT_DOUBLE_EQ(r.kept_at(50), 1);
  EXPECT_DOUBLE_EQ(r.kept_at(100), 1);
  EXPECT_DOUBLE_EQ(r.kept_at(200), 0.5);
  EXPECT_DOUBLE_EQ(r.kept_at(400), 0);
  EXPECT_DOUBLE_EQ(r.kept_at(800), 0);
  EXPECT_DOUBLE_EQ(r.horizon(), 400);
}

TEST(CacheState, SharesOfAStepWorkedByHand) {
  // Kept up to 140 bytes. Step: f1 {A 60, B 60}, f2 {B 60, C 60}, f3 {A 60}. After the
  // first step the stack (most recent first) is A, C, B. Second step:
  //   f1: A at depth 0 (+ 30, half of itself): kept; B below A and C: 120 + 30 > 140:
  //   gone -> 60 / 120.  Stack B, A, C.
  //   f2: B at 0: kept; C below B and A: 150: gone -> 60 / 120.  Stack C, B, A.
  //   f3: A below C and B: 150: gone -> 1.
  // Run back to back each op's first operand lies below the other (60 + 30): kept.
  const auto plan = hand_worked_step();
  const auto m = operand_misses(plan, 0, up_to(140));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_DOUBLE_EQ(m.at("f1").in_step, 0.5);
  EXPECT_DOUBLE_EQ(m.at("f2").in_step, 0.5);
  EXPECT_DOUBLE_EQ(m.at("f3").in_step, 1);
  for (const char* name : {"f1", "f2", "f3"}) EXPECT_DOUBLE_EQ(m.at(name).repeated, 0) << name;
  EXPECT_DOUBLE_EQ(m.at("f3").cold_weight(), 1);
  // Kept up to 160: everything is kept.
  for (const auto& [name, share] : operand_misses(plan, 0, up_to(160))) EXPECT_DOUBLE_EQ(share.in_step, 0) << name;
}

TEST(CacheState, ActivationSlotsAreSeparateBuffers) {
  // X# is one buffer per micro-batch in flight. GPipe on one stage with two micro-batches:
  // F0 F1 B0 B1, two slots; kept up to 120. Each use of X0 follows one of X1 (100 bytes):
  // 100 + 50 > 120: gone, in forward and backward alike.
  const std::vector<ComputeOp> f{op("f", {{"X#", 100}})}, b{op("b", {{"X#", 100}})};
  const auto gpipe = operand_misses(one_stage(2, Schedule::gpipe, f, b), 0, up_to(120));
  EXPECT_DOUBLE_EQ(gpipe.at("f").in_step, 1);
  EXPECT_DOUBLE_EQ(gpipe.at("b").in_step, 1);
  // 1F1B on one stage: F0 B0 F1 B1 in one slot: X is always the last thing touched.
  const auto one_f_one_b = operand_misses(one_stage(2, Schedule::one_f_one_b, f, b), 0, up_to(120));
  EXPECT_DOUBLE_EQ(one_f_one_b.at("f").in_step, 0);
  EXPECT_DOUBLE_EQ(one_f_one_b.at("b").in_step, 0);
}

TEST(CacheState, WhatTheHotMeasurementAlreadyMissedIsNotCountedTwice) {
  // One op of three 100-byte tensors, kept up to 220, run back to back: A sits below B
  // and C (200 + 50): gone; B (150) and C (50) kept. The hot measurement itself misses
  // 1/3. With nothing else in the step the step is the hot measurement: weight 0. With W
  // (500 bytes) between two calls nothing of A, B, C is left: 1, weight 1.
  const auto alone = operand_misses(one_stage(1, Schedule::one_f_one_b, {op("g", {{"A", 100}, {"B", 100}, {"C", 100}})}, {}),
                                    0, up_to(220));
  EXPECT_DOUBLE_EQ(alone.at("g").repeated, 1.0 / 3);
  EXPECT_DOUBLE_EQ(alone.at("g").in_step, 1.0 / 3);
  EXPECT_DOUBLE_EQ(alone.at("g").cold_weight(), 0);
  const auto evicted = operand_misses(
      one_stage(1, Schedule::one_f_one_b, {op("g", {{"A", 100}, {"B", 100}, {"C", 100}}), op("w", {{"W", 500}})}, {}), 0,
      up_to(220));
  EXPECT_DOUBLE_EQ(evicted.at("g").repeated, 1.0 / 3);
  EXPECT_DOUBLE_EQ(evicted.at("g").in_step, 1);
  EXPECT_DOUBLE_EQ(evicted.at("g").cold_weight(), 1);
}

TEST(CacheState, AStepOfTheProxyStaysBetweenHotAndCold) {
  // The real plan: every op has operands, every share is a fraction, and a host that
  // keeps more never misses more.
  TrainConfig c;
  c.layers = 2, c.hidden = 64, c.heads = 4, c.seq = 32, c.vocab = 256, c.micro_batch = 2, c.global_batch = 8;
  const auto plan = plan_step(c);
  const auto small = operand_misses(plan, 0, CacheRetention{{32 << 10, 256 << 10}, {1, 0}});
  const auto large = operand_misses(plan, 0, up_to(64 << 20));
  std::size_t ops = 0;
  for (const auto* phase : {&plan.stages[0].forward, &plan.stages[0].backward, &plan.stages[0].optimizer})
    for (const auto& o : phase->compute) {
      ++ops;
      ASSERT_TRUE(small.count(o.name)) << o.name << " has no operands";
      const auto& s = small.at(o.name);
      const auto& l = large.at(o.name);
      EXPECT_GE(s.in_step, 0) << o.name;
      EXPECT_LE(s.in_step, 1) << o.name;
      EXPECT_LE(l.in_step, s.in_step + 1e-12) << o.name;
      EXPECT_LE(l.repeated, s.repeated + 1e-12) << o.name;
    }
  EXPECT_EQ(small.size(), ops);
  // The whole step of this model (~1.5 MB) is kept at 64 MiB: nothing comes from memory.
  for (const auto& [name, m] : large) EXPECT_DOUBLE_EQ(m.in_step, 0) << name;
}

TEST(CacheState, ThePredictorCostsEachCallBetweenItsMeasurements) {
  // f3 of the step above, measured hot (1 ms) and cold (3 ms), with a host that keeps
  // all up to 100 bytes and nothing from 400: A's depth before f3 is 120 (+ 30), kept
  // 1 - log(1.5) / log(4); run alone A is at 30: kept. f3 costs 1 + (log 1.5 / log 4) x 2 ms.
  const auto plan = hand_worked_step();
  ComputeModel compute = measuring_f3({{1e-3, 0.0}, {3e-3, double(1 << 20)}}, 120);
  // No probe: the retention is the ramp across the sweep's boundary, 100 to 400 bytes.
  const auto ramp = compute.cache_retention();
  ASSERT_TRUE(ramp);
  EXPECT_EQ(ramp->distance, (std::vector<double>{100, 400}));
  // f1 and f2 have no measurement: the roofline bound of 0 FLOP and 0 bytes, 0 s.
  const auto step = predict_step(plan, CommModel{}, compute);
  EXPECT_NEAR(step.stages[0].forward_compute, 1e-3 + std::log(1.5) / std::log(4.0) * 2e-3, 1e-15);
  // A measured retention takes precedence: kept up to 200, f3's A is kept: the hot time.
  compute.retention = up_to(200);
  EXPECT_NEAR(predict_step(plan, CommModel{}, compute).stages[0].forward_compute, 1e-3, 1e-15);
  // The prediction of the op alone is the cold (most flushed) measurement.
  EXPECT_DOUBLE_EQ(compute.predict("stream_copy", "float32", 0, 120, "stream", "n=f3").seconds, 3e-3);
}

TEST(CacheState, NearSharesAndTheWarmMeasurementWorkedByHand) {
  // The step of SharesOfAStepWorkedByHand, everything kept (up to 1000 bytes) but only
  // 100 bytes near (the private caches). Of a tensor at depth d, min(b, 100 - d) is near.
  // Second step, from the stack A, C, B:
  //   f1: A at 0: 60 near; B at 120: none -> 1/2.  Stack B, A, C.
  //   f2: B at 0: 60; C at 120: none -> 1/2.  Stack C, B, A.
  //   f3: A at 120: none -> 0.
  // Back to back f1 finds B at 0 (60) and A at 60 (40): 5/6; f3 finds A at 0: 1. The
  // weight toward warm is how far the step's near share lies from that toward none:
  // f1 (5/6 - 1/2) / (5/6) = 0.4, f3 1. Nothing misses every cache: no weight of cold.
  const auto plan = hand_worked_step();
  CacheRetention retention = up_to(1000);
  retention.near_bytes = 100;
  const auto m = operand_misses(plan, 0, retention);
  EXPECT_DOUBLE_EQ(m.at("f1").near_in_step, 0.5);
  EXPECT_DOUBLE_EQ(m.at("f2").near_in_step, 0.5);
  EXPECT_DOUBLE_EQ(m.at("f3").near_in_step, 0);
  EXPECT_DOUBLE_EQ(m.at("f1").near_repeated, 5.0 / 6);
  EXPECT_DOUBLE_EQ(m.at("f3").near_repeated, 1);
  EXPECT_NEAR(m.at("f1").far_weight(), 0.4, 1e-15);
  EXPECT_DOUBLE_EQ(m.at("f3").far_weight(), 1);
  for (const char* name : {"f1", "f2", "f3"}) EXPECT_DOUBLE_EQ(m.at(name).cold_weight(), 0) << name;
  // f3 measured hot (1 ms), warm (2 ms, after a small flush) and cold (4 ms): it meets
  // its operand in the last level only: the warm time.
  ComputeModel compute = measuring_f3({{1e-3, 0.0}, {2e-3, 400.0}, {4e-3, double(1 << 20)}}, 60);
  compute.retention = retention;
  const auto bounds = compute.cache_bounds("stream_copy", "float32", "n=f3");
  ASSERT_TRUE(bounds && bounds->warm);
  EXPECT_DOUBLE_EQ(*bounds->warm, 2e-3);
  EXPECT_NEAR(predict_step(plan, CommModel{}, compute).stages[0].forward_compute, 2e-3, 1e-15);
  // Without the private caches' size the warm measurement has no share to weigh: the
  // step is costed as before, between hot and cold (kept: the hot time).
  compute.retention.near_bytes = 0;
  EXPECT_NEAR(predict_step(plan, CommModel{}, compute).stages[0].forward_compute, 1e-3, 1e-15);
}

TEST(CacheState, TheNeighboursTrafficDeepensWhatWasUsedLongAgo) {
  // Kept up to 140 bytes. f1 {A 60} and f2 {B 10}, a second each. In the second step A
  // lies below B (10 bytes) and two seconds of the neighbours' traffic: at 50 B/s
  // 10 + 100 + 30 = 140: kept; at 60 B/s 160: gone. Alone, A is one second deep: kept.
  // Without the ops' times the walk counts bytes only: kept.
  const auto plan = one_stage(1, Schedule::one_f_one_b, {op("f1", {{"A", 60}}), op("f2", {{"B", 10}})}, {});
  const OpSeconds a_second = [](const ComputeOp&) { return 1.0; };
  for (const auto& [rate, missed] : {std::pair{50.0, 0.0}, {60.0, 1.0}}) {
    CacheRetention r = up_to(140);
    r.neighbour_bytes_per_second = rate;
    const auto m = operand_misses(plan, 0, r, nullptr, a_second);
    EXPECT_DOUBLE_EQ(m.at("f1").in_step, missed) << rate;
    EXPECT_DOUBLE_EQ(m.at("f1").repeated, 0) << rate;
    EXPECT_DOUBLE_EQ(operand_misses(plan, 0, r).at("f1").in_step, 0) << rate;
  }
}

TEST(CacheState, MissedBytesCostWhatTheProbeMeasured) {
  // f3 of the hand-worked step with everything kept up to 140 bytes: A (60 bytes) lies at
  // 120 (+ 30): gone; alone it is kept. With the probe's cost of a missed byte, 1 us, f3
  // costs its warm time (nothing near: f = 1) plus 60 us, whatever the cold time.
  const auto plan = hand_worked_step();
  ComputeModel compute = measuring_f3({{1e-3, 0.0}, {2e-3, 400.0}, {9e-3, double(1 << 20)}}, 60);
  compute.retention = up_to(140);
  compute.retention.near_bytes = 100;
  compute.retention.miss_seconds_per_byte = 1e-6;
  const auto m = operand_misses(plan, 0, compute.retention);
  EXPECT_DOUBLE_EQ(m.at("f3").in_step, 1);
  EXPECT_DOUBLE_EQ(m.at("f3").repeated, 0);
  EXPECT_DOUBLE_EQ(m.at("f3").bytes, 60);
  EXPECT_NEAR(predict_step(plan, CommModel{}, compute).stages[0].forward_compute, 2e-3 + 60e-6, 1e-15);
}

}  // namespace
