// Tests of predict_step (models/step_predictor.hpp) on models whose every cost is known
// in closed form: operators at the roofline bound of one peak and one bandwidth, every
// collective one Hockney line alpha + beta n. The expected step is computed here from
// the plan and the pipeline formula written in the header, independently of the
// predictor's code; the layout search is checked against predict_step of each layout.
#include "models/step_predictor.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>

#include "models/layout_search.hpp"

namespace {

using namespace sextant::model;

constexpr double peak = 50e9, bandwidth = 20e9;  // FLOP/s (float32), bytes/s

// Per collective and level: alpha (s), beta (s/byte).
struct Line {
  double alpha, beta;
};
const std::map<std::string, Line> world_lines = {{"allreduce", {20e-6, 1.0 / 5e9}},
                                                 {"reduce_scatter", {15e-6, 1.0 / 6e9}},
                                                 {"allgather", {12e-6, 1.0 / 7e9}},
                                                 {"pingpong", {3e-6, 1.0 / 9e9}}};
const std::map<std::string, Line> intra_lines = {{"allreduce", {2e-6, 1.0 / 40e9}},
                                                 {"reduce_scatter", {2e-6, 1.0 / 40e9}},
                                                 {"allgather", {2e-6, 1.0 / 40e9}},
                                                 {"pingpong", {1e-6, 1.0 / 40e9}}};

ComputeModel compute_model() {
  ComputeModel m;
  m.ceilings.peak_flops["float32"] = peak;
  m.ceilings.memory.push_back({"DRAM", 1, 1e15, bandwidth, 4});
  return m;
}

CommModel comm_model() {
  CommModel m;
  // inter: across nodes, the same lines as world (one node's worth of ranks is all world has)
  for (const char* level : {"world", "intra", "inter"})
    for (const auto& [name, line] : std::string(level) == "intra" ? intra_lines : world_lines)
      for (int ranks : {2, 4}) {
        CommFit f;
        f.benchmark = name;
        f.level = level;
        f.dtype = name == "pingpong" ? "byte" : "float32";
        f.ranks = ranks;
        Segment s;
        s.lo_bytes = 1, s.hi_bytes = 1e12, s.alpha = line.alpha, s.beta = line.beta, s.points = 10;
        f.fit.segments.push_back(s);
        f.bytes_min = s.lo_bytes, f.bytes_max = s.hi_bytes;
        m.fits.push_back(f);
      }
  return m;
}

// The closed forms, from the plan.
double roof(const ComputeOp& op) { return std::max(op.flops / peak, op.bytes / bandwidth); }
double roof(const Phase& p) {
  double t = 0;
  for (const auto& op : p.compute) t += roof(op);
  return t;
}
double line(const CommOp& op, const LevelMap& levels) {
  if (op.name.empty() || op.ranks < 2 || op.bytes <= 0) return 0;
  const std::string& level = op.kind == "tp" ? levels.tp : op.kind == "dp" ? levels.dp : levels.pp;
  const Line& l = (level == "intra" ? intra_lines : world_lines).at(op.collective);
  return l.alpha + l.beta * op.bytes;
}
double line(const std::vector<CommOp>& ops, const LevelMap& levels) {
  double t = 0;
  for (const auto& op : ops) t += line(op, levels);
  return t;
}

struct Expected {
  double total = 0, bubble_fraction = 0;
};

// (M + S - 1) x the slowest stage's micro-batch, then the slowest tail of gradient sync
// (all of it exposed, or with overlap what the last backward does not hide) and update.
Expected expected_step(const StepPlan& plan, const LevelMap& levels) {
  const TrainConfig& c = plan.config;
  const int S = c.pp, M = c.micro_batches();
  double slowest = 0, tail = 0;
  for (const auto& st : plan.stages) {
    const double backward = roof(st.backward);
    slowest = std::max(slowest, roof(st.forward) + backward + line(st.forward.comm, levels) +
                                    line(st.backward.comm, levels) + line(st.send_activation, levels) +
                                    line(st.send_gradient, levels));
    const double dp = line(st.dp_sync, levels);
    const double exposed = c.overlap_dp && !st.dp_sync.empty()
                               ? std::max(line(st.dp_sync.back(), levels), dp - backward)
                               : dp;
    tail = std::max(tail, exposed + roof(st.optimizer) + line(st.optimizer.comm, levels));
  }
  return {(M + S - 1) * slowest + tail, double(S - 1) / (M + S - 1)};
}

TrainConfig config(int dp, int tp, int pp) {
  TrainConfig c;
  c.layers = 4, c.hidden = 64, c.heads = 4, c.seq = 32, c.vocab = 256, c.micro_batch = 2, c.global_batch = 16;
  c.dp = dp, c.tp = tp, c.pp = pp;
  return c;
}

void expect_matches(const TrainConfig& c, const LevelMap& levels = {}) {
  SCOPED_TRACE("dp " + std::to_string(c.dp) + " tp " + std::to_string(c.tp) + " pp " + std::to_string(c.pp) +
               (c.zero1 ? " zero1" : "") + (c.overlap_dp ? " overlap" : "") + " tp level " + levels.tp);
  const auto plan = plan_step(c);
  const auto p = predict_step(plan, comm_model(), compute_model(), levels);
  const auto e = expected_step(plan, levels);
  EXPECT_NEAR(p.total, e.total, 1e-12 * e.total);
  EXPECT_DOUBLE_EQ(p.bubble_fraction, e.bubble_fraction);
  double parts = 0;
  for (const auto& [name, t] : p.breakdown) {
    EXPECT_GE(t, 0) << name;
    parts += t;
  }
  EXPECT_NEAR(parts, p.total, 1e-12 * p.total);
}

TEST(StepPredictor, OneRankIsTheSumOfItsOperators) { expect_matches(config(1, 1, 1)); }

TEST(StepPredictor, EveryParallelismMatchesTheClosedForm) {
  for (auto [dp, tp, pp] : {std::array{2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 2, 1}, {1, 2, 2}, {2, 1, 2}, {4, 1, 1},
                            {1, 1, 4}})
    expect_matches(config(dp, tp, pp));
}

TEST(StepPredictor, ZeroOneAndOverlapMatchTheClosedForm) {
  auto c = config(2, 1, 2);
  c.zero1 = true;
  expect_matches(c);
  c.zero1 = false;
  c.overlap_dp = true;
  c.bucket_bytes = 8192;
  expect_matches(c);
}

TEST(StepPredictor, EachKindOfTrafficIsCostedOnItsLevel) {
  auto c = config(2, 2, 2);
  LevelMap intra_tp;
  intra_tp.tp = "intra";
  expect_matches(c, intra_tp);
  // Only the tensor-parallel term moves, by exactly the lines' difference.
  const auto plan = plan_step(c);
  const auto world = predict_step(plan, comm_model(), compute_model());
  const auto intra = predict_step(plan, comm_model(), compute_model(), intra_tp);
  auto part = [](const StepPrediction& p, const std::string& name) {
    for (const auto& [n, t] : p.breakdown)
      if (n == name) return t;
    return -1.0;
  };
  EXPECT_LT(part(intra, "tp communication"), part(world, "tp communication"));
  EXPECT_DOUBLE_EQ(part(intra, "dp communication (exposed)"), part(world, "dp communication (exposed)"));
  EXPECT_DOUBLE_EQ(part(intra, "forward compute"), part(world, "forward compute"));
}

TEST(StepPredictor, PlacementPutsEachGroupOnTheLevelItCrosses) {
  // 4 ranks per node, TP 2 x DP 2 x PP 2: the TP pairs and the DP groups (TP x DP = 4
  // consecutive ranks) stay inside a node, the pipeline's stages are on two nodes.
  auto c = config(2, 2, 2);
  auto levels = placed_levels(c, 4, comm_model());
  EXPECT_EQ(levels.tp, "intra");
  EXPECT_EQ(levels.dp, "intra");
  EXPECT_EQ(levels.pp, "inter");
  expect_matches(c, levels);
  // 2 ranks per node: DP crosses nodes too; 1: everything does.
  levels = placed_levels(c, 2, comm_model());
  EXPECT_EQ(levels.tp, "intra");
  EXPECT_EQ(levels.dp, "inter");
  levels = placed_levels(c, 1, comm_model());
  EXPECT_EQ(levels.tp, "inter");
  // A model without the level: world, and a note that says so.
  CommModel world_only;
  for (const auto& f : comm_model().fits)
    if (f.level == "world") world_only.fits.push_back(f);
  std::vector<std::string> notes;
  levels = placed_levels(c, 4, world_only, &notes);
  EXPECT_EQ(levels.tp, "world");
  EXPECT_EQ(levels.pp, "world");
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_NE(notes[0].find("no 'intra' level"), std::string::npos) << notes[0];
}

TEST(StepPredictor, MoreMicroBatchesShrinkTheBubble) {
  auto c = config(1, 1, 4);
  c.micro_batch = 4;  // 4 micro-batches
  const auto few = predict_step(plan_step(c), comm_model(), compute_model());
  c.micro_batch = 1;  // 16 micro-batches
  const auto many = predict_step(plan_step(c), comm_model(), compute_model());
  EXPECT_DOUBLE_EQ(few.bubble_fraction, 3.0 / 7.0);
  EXPECT_DOUBLE_EQ(many.bubble_fraction, 3.0 / 19.0);
}

TEST(LayoutSearch, RanksEveryLayoutByItsOwnPrediction) {
  const auto base = config(1, 1, 1);
  const auto found = search_layouts(base, 8, comm_model(), compute_model());
  ASSERT_FALSE(found.layouts.empty());
  for (std::size_t i = 0; i < found.layouts.size(); ++i) {
    const auto& r = found.layouts[i];
    EXPECT_EQ(r.config.ranks(), 8);
    const auto own = predict_step(plan_step(r.config), comm_model(), compute_model());
    EXPECT_DOUBLE_EQ(r.prediction.total, own.total);
    if (i > 0) EXPECT_LE(found.layouts[i - 1].prediction.total, r.prediction.total);
  }
  // Placed: every layout on the levels its groups cross, and costed there.
  const auto placed = search_layouts(base, 8, comm_model(), compute_model(), {}, 0, 4);
  ASSERT_EQ(placed.layouts.size(), found.layouts.size());
  for (const auto& r : placed.layouts) {
    const auto levels = placed_levels(r.config, 4, comm_model());
    EXPECT_EQ(r.levels.tp, levels.tp);
    EXPECT_EQ(r.levels.dp, levels.dp);
    EXPECT_EQ(r.levels.pp, levels.pp);
    EXPECT_DOUBLE_EQ(r.prediction.total, predict_step(plan_step(r.config), comm_model(), compute_model(), levels).total);
  }
  // A memory limit below every layout's working set leaves none, and counts them.
  const auto none = search_layouts(base, 8, comm_model(), compute_model(), {}, 1.0);
  EXPECT_TRUE(none.layouts.empty());
  EXPECT_EQ(none.over_memory, static_cast<long long>(found.layouts.size()));
}

}  // namespace
