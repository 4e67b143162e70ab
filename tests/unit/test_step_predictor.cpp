// Tests of predict_step (models/step_predictor.hpp) on models whose every cost is known
// in closed form: operators at the roofline bound of one peak and one bandwidth, every
// collective one Hockney line alpha + beta n. One stage: the expected step is the sum of
// the plan's costs, computed here from the plan. Pipelines: stages built here with
// chosen forward, backward and message times, against the classic closed forms and
// timelines worked by hand (in the comments); the layout search is checked against
// predict_step of each layout.
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
                                                 {"pingpong", {3e-6, 1.0 / 9e9}},
                                                 {"alltoall", {25e-6, 1.0 / 4e9}}};
const std::map<std::string, Line> intra_lines = {{"alltoall", {3e-6, 1.0 / 30e9}},
                                                 {"allreduce", {2e-6, 1.0 / 40e9}},
                                                 {"reduce_scatter", {2e-6, 1.0 / 40e9}},
                                                 {"allgather", {2e-6, 1.0 / 40e9}},
                                                 {"pingpong", {1e-6, 1.0 / 40e9}}};

// The isolated form of the world collectives (each call after idle, as one issued after
// compute meets the transport): lines of their own. Models have it when with_isolated.
const std::map<std::string, Line> isolated_lines = {{"allreduce", {9e-6, 1.0 / 8e9}},
                                                    {"reduce_scatter", {7e-6, 1.0 / 9e9}},
                                                    {"allgather", {5e-6, 1.0 / 11e9}}};
bool with_isolated = false;

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
        if (with_isolated && std::string(level) == "world" && isolated_lines.count(name)) {
          f.benchmark = isolated_form(name);
          f.fit.segments.front().alpha = isolated_lines.at(name).alpha;
          f.fit.segments.front().beta = isolated_lines.at(name).beta;
          m.fits.push_back(f);
        }
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
const Line* line_of(const CommOp& op, const LevelMap& levels) {
  if (op.name.empty() || op.ranks < 2 || op.bytes <= 0) return nullptr;
  const std::string& level = levels.of(op.traffic);
  const bool isolated = with_isolated && !op.back_to_back && level == "world" && isolated_lines.count(op.collective);
  return &(isolated ? isolated_lines.at(op.collective) : (level == "intra" ? intra_lines : world_lines).at(op.collective));
}
double line(const CommOp& op, const LevelMap& levels) {
  const Line* l = line_of(op, levels);
  return l ? l->alpha + l->beta * op.bytes : 0;
}
double line(const std::vector<CommOp>& ops, const LevelMap& levels) {
  double t = 0;
  for (const auto& op : ops) t += line(op, levels);
  return t;
}
// Collectives started together: the longest alpha plus every beta n.
double together(const std::vector<CommOp>& ops, const LevelMap& levels) {
  double alpha = 0, transfers = 0;
  for (const auto& op : ops)
    if (const Line* l = line_of(op, levels)) alpha = std::max(alpha, l->alpha), transfers += l->beta * op.bytes;
  return alpha + transfers;
}

// One stage (no pipeline): M micro-batches of forward, backward and their TP
// collectives, then the slowest gradient sync tail (all of it exposed, with overlap
// what the last backward does not hide, stale by s steps what s steps' micro-batches do
// not of its buckets started together) and the optimizer.
double expected_single_stage(const StepPlan& plan, const LevelMap& levels) {
  const TrainConfig& c = plan.config;
  const auto& st = plan.stages.at(0);
  const double backward = roof(st.backward);
  const double micro = roof(st.forward) + backward + line(st.forward.comm, levels) + line(st.backward.comm, levels);
  const double dp = c.staleness > 0 ? together(st.dp_sync, levels) : line(st.dp_sync, levels);
  const double exposed = c.staleness > 0 ? std::max(0.0, dp - c.staleness * c.micro_batches() * micro)
                         : c.overlap_dp && !st.dp_sync.empty() ? std::max(line(st.dp_sync.back(), levels), dp - backward)
                                                               : dp;
  return c.micro_batches() * micro + exposed + roof(st.optimizer) + line(st.optimizer.comm, levels);
}

TrainConfig config(int dp, int tp, int pp) {
  TrainConfig c;
  c.layers = 4, c.hidden = 64, c.heads = 4, c.seq = 32, c.vocab = 256, c.micro_batch = 2, c.global_batch = 16;
  c.dp = dp, c.tp = tp, c.pp = pp;
  return c;
}

void expect_parts_add_up(const StepPrediction& p) {
  double parts = 0;
  for (const auto& [name, t] : p.breakdown) {
    EXPECT_GE(t, 0) << name;
    parts += t;
  }
  EXPECT_NEAR(parts, p.total, 1e-12 * p.total);
}

// One stage: the sum of the plan's costs. More stages: no stage can finish before its
// own work is done (its compute, TP collectives, received transfers, gradient sync and
// optimizer), and the step ends with the stage that finishes last.
void expect_matches(const TrainConfig& c, const LevelMap& levels = {}) {
  SCOPED_TRACE("dp " + std::to_string(c.dp) + " tp " + std::to_string(c.tp) + " pp " + std::to_string(c.pp) +
               (c.zero ? " zero" + std::to_string(c.zero) : "") + (c.overlap_dp ? " overlap" : "") +
               (c.staleness ? " stale" + std::to_string(c.staleness) : "") + " tp level " + levels.tp);
  const auto plan = plan_step(c);
  const auto p = predict_step(plan, comm_model(), compute_model(), levels);
  EXPECT_DOUBLE_EQ(p.bubble_fraction, double(c.pp - 1) / (c.micro_batches() + c.pp - 1));
  expect_parts_add_up(p);
  if (c.pp == 1) {
    const double e = expected_single_stage(plan, levels);
    EXPECT_NEAR(p.total, e, 1e-12 * e);
    return;
  }
  const int M = c.micro_batches();
  double latest = 0;
  for (int s = 0; s < c.pp; ++s) {
    const auto& st = plan.stages[s];
    double own = M * (roof(st.forward) + roof(st.backward) + line(st.forward.comm, levels) +
                      line(st.backward.comm, levels)) +
                 roof(st.optimizer) + line(st.optimizer.comm, levels);
    if (!c.overlap_dp && c.staleness == 0) own += line(st.dp_sync, levels);
    EXPECT_LE(own, p.total * (1 + 1e-12)) << "stage " << s;
    latest = std::max(latest, p.stages[s].finish);
  }
  EXPECT_DOUBLE_EQ(p.total, latest);
  EXPECT_DOUBLE_EQ(p.stages[p.critical_stage].finish, p.total);
}

TEST(StepPredictor, OneRankIsTheSumOfItsOperators) { expect_matches(config(1, 1, 1)); }

TEST(StepPredictor, EveryParallelismMatchesTheClosedForm) {
  for (auto [dp, tp, pp] : {std::array{2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 2, 1}, {1, 2, 2}, {2, 1, 2}, {4, 1, 1},
                            {1, 1, 4}})
    expect_matches(config(dp, tp, pp));
}

TEST(StepPredictor, ZeroAndOverlapMatchTheClosedForm) {
  for (int pp : {1, 2}) {
    auto c = config(2, 1, pp);
    for (int zero : {1, 3}) {
      c.zero = zero;
      expect_matches(c);
    }
    c.zero = 0;
    c.overlap_dp = true;
    c.bucket_bytes = 8192;
    expect_matches(c);
  }
}

// Compressed dp gradients: the sync's allreduces run in the optimizer step, at half the
// bytes; they are the step's dp communication (where the proxy counts them), not its
// optimizer time, and the step is the closed form's. A model without the bfloat16
// allreduce costs them as float32 at their bytes and says so; one with it, by its line.
TEST(StepPredictor, CompressedSyncIsDpCommunicationAtHalfTheBytes) {
  for (int pp : {1, 2}) {
    auto c = config(2, 1, pp);
    c.compress = Compression::bf16;
    expect_matches(c);
  }
  auto c = config(2, 1, 1);
  const auto plain = predict_step(plan_step(c), comm_model(), compute_model());
  c.compress = Compression::bf16;
  const auto plan = plan_step(c);
  const auto p = predict_step(plan, comm_model(), compute_model());
  const LevelMap levels;
  EXPECT_NEAR(p.stages[0].dp_total, line(plan.stages[0].optimizer.comm, levels), 1e-15);
  EXPECT_NEAR(p.stages[0].optimizer, roof(plan.stages[0].optimizer), 1e-15);
  EXPECT_LT(p.stages[0].dp_total, plain.stages[0].dp_total);
  const auto said = [](const StepPrediction& q) {
    return std::count_if(q.notes.begin(), q.notes.end(), [](const std::string& n) {
      return n == "allreduce in bfloat16: not in the model, costed as float32 at its bytes";
    });
  };
  EXPECT_EQ(said(p), 1);
  EXPECT_EQ(said(plain), 0);
  CommModel with_bf16 = comm_model();
  for (std::size_t i = 0, n = with_bf16.fits.size(); i < n; ++i)
    if (with_bf16.fits[i].benchmark == "allreduce") {
      CommFit f = with_bf16.fits[i];
      f.dtype = "bfloat16";
      f.fit.segments.front().beta *= 3;  // a slower sum than float32's
      with_bf16.fits.push_back(f);
    }
  const auto q = predict_step(plan, with_bf16, compute_model());
  EXPECT_EQ(said(q), 0);
  double expected = 0;
  for (const auto& op : plan.stages[0].optimizer.comm) expected += world_lines.at("allreduce").alpha + 3 * world_lines.at("allreduce").beta * op.bytes;
  EXPECT_NEAR(q.stages[0].dp_total, expected, 1e-15);
  EXPECT_NEAR(q.total - p.total, expected - p.stages[0].dp_total, 1e-15);
}

// Stale-synchronous dp: the gradient sync's buckets start together, so they cost one
// latency and all their transfers, and run behind the next `staleness` steps'
// micro-batches, so only what they do not hide is exposed. With a link 10^4 times
// slower, part of it is, and more with one step of delay than with two.
TEST(StepPredictor, StaleDpHidesTheSyncBehindTheNextSteps) {
  for (int pp : {1, 2})
    for (int staleness : {1, 2}) {
      auto c = config(2, pp == 1 ? 2 : 1, pp);
      c.staleness = staleness;
      c.bucket_bytes = 8192;
      expect_matches(c);
    }
  auto c = config(2, 1, 1);
  c.bucket_bytes = 8192;
  const auto plan = plan_step(c);
  ASSERT_GT(plan.stages[0].dp_sync.size(), 2u);
  CommModel slow = comm_model();
  for (auto& f : slow.fits) f.fit.segments.front().beta *= 1e4;
  const auto synchronous = predict_step(plan, slow, compute_model());
  const Line& allreduce = world_lines.at("allreduce");
  double exposed[3];
  for (int staleness : {0, 1, 2}) {
    c.staleness = staleness;
    const auto p = predict_step(plan_step(c), slow, compute_model());
    exposed[staleness] = p.stages[0].dp_exposed;
    if (staleness == 0) continue;
    // One alpha less per bucket than one by one.
    const double alphas_saved = (plan.stages[0].dp_sync.size() - 1) * allreduce.alpha;
    EXPECT_NEAR(p.stages[0].dp_total, synchronous.stages[0].dp_total - alphas_saved, 1e-12 * p.stages[0].dp_total);
  }
  EXPECT_DOUBLE_EQ(exposed[0], synchronous.stages[0].dp_total);
  EXPECT_GT(exposed[1], 0);
  EXPECT_LT(exposed[1], exposed[0]);
  EXPECT_LT(exposed[2], exposed[1]);
  // What the hidden sync costs the host is not modelled: the prediction says so, once.
  const auto notes = predict_step(plan_step(c), slow, compute_model()).notes;
  EXPECT_EQ(std::count_if(notes.begin(), notes.end(),
                          [](const std::string& n) { return n.starts_with("stale gradient sync:"); }),
            1);
  EXPECT_TRUE(std::none_of(synchronous.notes.begin(), synchronous.notes.end(),
                           [](const std::string& n) { return n.starts_with("stale gradient sync:"); }));
}

// A collective issued after compute is costed by the isolated form where the model has
// it, one right behind another (DP's later buckets, a phase's second collective after the
// same op) by the back-to-back fit; at another level, only back to back was measured.
TEST(StepPredictor, CollectivesAfterComputeAreCostedByTheIsolatedForm) {
  struct Isolated {
    Isolated() { with_isolated = true; }
    ~Isolated() { with_isolated = false; }
  } on;
  for (int zero : {0, 1, 3}) {
    auto c = config(2, 2, 1);
    c.zero = zero;
    c.bucket_bytes = 8192;
    const auto plan = plan_step(c);
    const auto& st = plan.stages.at(0);
    ASSERT_GT(st.dp_sync.size(), 1u);
    EXPECT_FALSE(st.dp_sync.front().back_to_back);
    EXPECT_TRUE(st.dp_sync.back().back_to_back);
    expect_matches(c);
    LevelMap intra;
    intra.tp = intra.dp = "intra";
    expect_matches(c, intra);
    const double both = predict_step(plan, comm_model(), compute_model()).total;
    with_isolated = false;
    EXPECT_GT(predict_step(plan, comm_model(), compute_model()).total, both) << "zero " << zero;
    with_isolated = true;
  }
}

// Pipelines with chosen costs: S equal stages whose forward takes F and backward B
// (one operator at the roofline's peak), messages between them a Hockney line with
// latency a and transfer b (a pingpong fit at the message's size).
constexpr double message_bytes = 1e6;

StepPrediction pipeline(Schedule schedule, int S, int M, double F, double B, double a, double b,
                        double late_receive = -1, double message_overhead = 0) {
  StepPlan plan;
  plan.config.pp = S;
  plan.config.micro_batch = 1;
  plan.config.global_batch = M;
  plan.config.schedule = schedule;
  for (int s = 0; s < S; ++s) {
    StagePlan st;
    st.stage = s;
    st.forward.compute = {{"f", "gemm", "forward", F * peak, 0, "", {}}};
    st.backward.compute = {{"b", "gemm", "backward", B * peak, 0, "", {}}};
    if (s + 1 < S) st.send_activation = {"act", Traffic::pp, "pingpong", message_bytes, 2};
    if (s > 0) st.send_gradient = {"grad", Traffic::pp, "pingpong", message_bytes, 2};
    plan.stages.push_back(st);
  }
  CommModel comm;
  CommFit f;
  f.benchmark = "pingpong", f.level = "world", f.dtype = "byte", f.ranks = 2;
  Segment line;
  line.lo_bytes = 1, line.hi_bytes = 1e12, line.alpha = a, line.beta = b / message_bytes, line.points = 10;
  f.fit.segments.push_back(line);
  f.bytes_min = line.lo_bytes, f.bytes_max = line.hi_bytes;
  comm.fits.push_back(f);
  if (late_receive >= 0) {  // what a receiver that posts late pays: a constant here
    f.benchmark = "late_receive";
    f.fit.segments.front().alpha = late_receive, f.fit.segments.front().beta = 0;
    comm.fits.push_back(f);
  }
  if (message_overhead == 0) return predict_step(plan, comm, compute_model());
  SyncModel sync;  // no partners' wait: the messages' host overhead alone
  sync.ranks = 2, sync.interval_s = {1e-3}, sync.excess = {0};
  sync.message_bytes = {message_bytes}, sync.message_overhead = {message_overhead};
  return predict_step(plan, comm, compute_model(), {}, &sync);
}

double part(const StepPrediction& p, const std::string& name) {
  for (const auto& [n, t] : p.breakdown)
    if (n == name) return t;
  return -1.0;
}

TEST(StepPredictor, FreeMessagesGiveTheClassicPipeline) {
  // (M + S - 1)(F + B) for both schedules, the bubble (S - 1)(F + B).
  for (auto schedule : {Schedule::gpipe, Schedule::one_f_one_b})
    for (auto [S, M] : {std::array{2, 4}, {4, 4}, {4, 8}, {3, 1}}) {
      const auto p = pipeline(schedule, S, M, 1e-3, 2e-3, 0, 0);
      EXPECT_NEAR(p.total, (M + S - 1) * 3e-3, 1e-15) << (schedule == Schedule::gpipe ? "gpipe" : "1f1b") << " S " << S << " M " << M;
      EXPECT_NEAR(part(p, "pipeline bubble"), (S - 1) * 3e-3, 1e-15);
      expect_parts_add_up(p);
    }
}

TEST(StepPredictor, GPipePaysTheLatencyOnceEachWay) {
  // Fill and drain cross S - 1 links each way: (M + S - 1)(F + B) + 2 (S - 1) a.
  for (auto [S, M] : {std::array{2, 3}, {4, 8}}) {
    const double a = 0.5e-3;
    const auto p = pipeline(Schedule::gpipe, S, M, 1e-3, 2e-3, a, 0);
    EXPECT_NEAR(p.total, (M + S - 1) * 3e-3 + 2 * (S - 1) * a, 1e-15) << "S " << S << " M " << M;
    expect_parts_add_up(p);
  }
}

TEST(StepPredictor, OneFOneBWaitsARoundTripPerCycle) {
  // S = 2, M = 3, F = 1, B = 2, a = 0.5 (ms). Stage 0 runs F0 F1 B0 F2 B1 B2, stage 1
  // F0 B0 F1 B1 F2 B2:
  //   stage 1: F0 1.5-2.5, B0 2.5-4.5, F1 4.5-5.5, B1 5.5-7.5, F2 8.5-9.5, B2 9.5-11.5
  //   stage 0: F0 0-1, F1 1-2, B0 5-7, F2 7-8, B1 8-10, B2 12-14
  // 14 ms, 2 more than the classic 12 and 1 more than GPipe's 13 (its B0 7-9, B1 9-11,
  // B2 11-13): one micro-batch in flight cannot cover the round trip. Stage 0 waits
  // 2-5 and 10-12.
  const auto p = pipeline(Schedule::one_f_one_b, 2, 3, 1e-3, 2e-3, 0.5e-3, 0);
  EXPECT_NEAR(p.total, 14e-3, 1e-15);
  EXPECT_EQ(p.critical_stage, 0);
  EXPECT_NEAR(part(p, "pipeline bubble"), 5e-3, 1e-15);
  EXPECT_NEAR(part(p, "forward compute") + part(p, "backward compute"), 9e-3, 1e-15);
  EXPECT_NEAR(pipeline(Schedule::gpipe, 2, 3, 1e-3, 2e-3, 0.5e-3, 0).total, 13e-3, 1e-15);
}

TEST(StepPredictor, ReceivingATransferKeepsTheStageBusy) {
  // GPipe, S = 2, M = 3, F = 1, B = 2, a = 0, b = 0.25 (ms): each receive takes its
  // stage 0.25 before the compute starts.
  //   stage 1: F0 1-2.25, F1 2.25-3.5, F2 3.5-4.75, B0 -6.75, B1 -8.75, B2 -10.75
  //   stage 0: F0 0-1, F1 1-2, F2 2-3, B0 6.75-9, B1 9-11.25, B2 11.25-13.5
  // Stage 0: 9 computing, 0.75 receiving, 3.75 waiting.
  const auto p = pipeline(Schedule::gpipe, 2, 3, 1e-3, 2e-3, 0, 0.25e-3);
  EXPECT_NEAR(p.total, 13.5e-3, 1e-15);
  EXPECT_NEAR(part(p, "pp communication"), 0.75e-3, 1e-15);
  EXPECT_NEAR(part(p, "pipeline bubble"), 3.75e-3, 1e-15);
  expect_parts_add_up(p);
}

TEST(StepPredictor, AMessageCostsTheComputeItArrivesDuringOrIsSentFrom) {
  // Free messages whose host overhead is o = 0.25 ms each, S = 2, M = 3, F = 1, B = 2
  // (ms). A send costs the action that sends it o; a receive costs o only when the
  // message arrives while its stage computes (one it waits for arrives in idle time).
  // GPipe: stage 0's forwards each send (F + o apart), stage 1's take F: every
  // activation finds stage 1 idle, and every gradient (B + o apart) finds stage 0 idle.
  //   stage 0: F0 0-1.25, F1 -2.5, F2 -3.75;  B0 7-9, B1 9.25-11.25, B2 11.5-13.5
  //   stage 1: F0 1.25-2.25, F1 2.5-3.5, F2 3.75-4.75;  B0 -7, B1 -9.25, B2 -11.5
  const double o = 0.25e-3;
  const auto gpipe = pipeline(Schedule::gpipe, 2, 3, 1e-3, 2e-3, 0, 0, -1, o);
  EXPECT_NEAR(gpipe.total, 13.5e-3, 1e-15);
  EXPECT_NEAR(gpipe.stages.at(0).message_overhead, 3 * o, 1e-15);
  EXPECT_NEAR(gpipe.stages.at(1).message_overhead, 3 * o, 1e-15);
  expect_parts_add_up(gpipe);
  // 1F1B: stage 1 runs F0 B0 F1 B1 F2 B2; the activations of F1 (sent at 2.5) and F2
  // (7.75) arrive while it computes B0 (2.25-4.5) and B1 (5.75-8), so its F1 and F2 pay
  // their receives: 3 sends and 2 receives.
  //   stage 0: F0 0-1.25, F1 -2.5, B0 4.5-6.5, F2 -7.75, B1 8-10, B2 11.5-13.5
  //   stage 1: F0 1.25-2.25, B0 -4.5, F1 -5.75, B1 -8, F2 -9.25, B2 -11.5
  const auto one_f_one_b = pipeline(Schedule::one_f_one_b, 2, 3, 1e-3, 2e-3, 0, 0, -1, o);
  EXPECT_NEAR(one_f_one_b.total, 13.5e-3, 1e-15);
  EXPECT_NEAR(one_f_one_b.stages.at(0).message_overhead, 3 * o, 1e-15);
  EXPECT_NEAR(one_f_one_b.stages.at(1).message_overhead, 5 * o, 1e-15);
  EXPECT_NEAR(part(one_f_one_b, "pp communication"), 3 * o, 1e-15);  // the critical stage: 0
  expect_parts_add_up(one_f_one_b);
  // S = 3: the middle stage sends in each pass, 2 M o a step at least, more than an
  // outer stage's M o, and at most 4 M o with every receive charged.
  for (auto schedule : {Schedule::gpipe, Schedule::one_f_one_b}) {
    const auto three = pipeline(schedule, 3, 4, 1e-3, 2e-3, 0, 0, -1, o);
    EXPECT_GT(three.stages.at(1).message_overhead, three.stages.at(0).message_overhead);
    EXPECT_GE(three.stages.at(1).message_overhead, 2 * 4 * o - 1e-15);
    EXPECT_LE(three.stages.at(1).message_overhead, 4 * 4 * o + 1e-15);
  }
}

TEST(StepPredictor, AReceiverPaysWhatLateReceiveMeasuredOnceItPosts) {
  // GPipe, S = 2, M = 3, F = 1, B = 2 (ms); a message's one-way time 0.5 (the
  // ping-pong's), of which a late receiver pays 0.4 from its post (late_receive: a
  // rendezvous transfer starts then), so it is complete no sooner than 0.5 after the send:
  //   stage 1: F0 1.5-2.5 (posted 1.1), F1 2.9-3.9, F2 4.3-5.3, B0 -7.3, B1 -9.3, B2 -11.3
  //   stage 0: F0 0-1, F1 1-2, F2 2-3, B0 7.8-9.8, B1 10.2-12.2, B2 12.6-14.6
  // where the Hockney split (all of it latency) gave 13.
  const auto p = pipeline(Schedule::gpipe, 2, 3, 1e-3, 2e-3, 0.5e-3, 0, 0.4e-3);
  EXPECT_NEAR(p.total, 14.6e-3, 1e-15);
  EXPECT_NEAR(part(p, "pp communication"), 1.2e-3, 1e-15);
  EXPECT_NEAR(part(p, "pipeline bubble"), 4.4e-3, 1e-15);
  expect_parts_add_up(p);
  EXPECT_NEAR(pipeline(Schedule::gpipe, 2, 3, 1e-3, 2e-3, 0.5e-3, 0).total, 13e-3, 1e-15);
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
    if (i > 0) {
      EXPECT_LE(found.layouts[i - 1].prediction.total, r.prediction.total);
    }
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

// A mixture of experts: with ep the four all-to-alls of every layer and micro-batch are
// the step's ep communication, each at its line; the step is the closed form's. Without
// ep the experts are local and nothing is sent for them.
TEST(StepPredictor, ExpertsAllToAllsAreEpCommunication) {
  for (int pp : {1, 2})
    for (int ep : {1, 2}) {
      auto c = config(2, 1, pp);
      c.experts = 4, c.top_k = 2, c.ep = ep;
      expect_matches(c);
      const auto plan = plan_step(c);
      const auto p = predict_step(plan, comm_model(), compute_model());
      double expected = 0;  // the critical stage's, per micro-batch
      for (const Phase* ph : {&plan.stages[p.critical_stage].forward, &plan.stages[p.critical_stage].backward})
        for (const auto& op : ph->comm) expected += op.traffic == Traffic::ep ? line(op, LevelMap{}) : 0;
      EXPECT_GT(ep > 1 ? expected : 1.0, 0);
      EXPECT_NEAR(part(p, "ep communication"), c.micro_batches() * expected, 1e-12 * p.total) << "pp " << pp << " ep " << ep;
    }
}

// Mixed precision: the master update is costed in float64 (its own ComputeOp::dtype),
// the widening and narrowing and everything else in the step's float32. A float64 peak
// 1000x below float32's makes the update compute-bound, so costing it in float32 shows.
TEST(StepPredictor, MixedPrecisionCostsTheMasterUpdateInItsOwnType) {
  auto c = config(2, 1, 1);
  c.master = "float64";
  const auto plan = plan_step(c);
  auto compute = compute_model();
  compute.ceilings.peak_flops["float64"] = peak / 1000;
  const auto p = predict_step(plan, comm_model(), compute);
  double expected = 0;
  int in_float64 = 0;
  for (const auto& op : plan.stages[0].optimizer.compute) {
    const double flops = op.dtype == "float64" ? peak / 1000 : peak;
    expected += std::max(op.flops / flops, op.bytes / bandwidth);
    in_float64 += op.dtype == "float64";
  }
  EXPECT_EQ(in_float64, 1);
  EXPECT_NEAR(part(p, "optimizer"), expected, 1e-12 * expected);
  EXPECT_GT(part(p, "optimizer"), 2 * roof(plan.stages[0].optimizer));  // the float32 roof of the same ops
}
