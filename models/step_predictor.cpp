#include "models/step_predictor.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace sextant::model {
namespace {

class Coster {
 public:
  Coster(const CommModel& comm, const ComputeModel& compute, const LevelMap& levels, const std::string& dtype,
         std::vector<std::string>& notes)
      : comm_(comm), compute_(compute), levels_(levels), dtype_(dtype), notes_(notes) {}

  // Layers repeat their operators and collectives: each distinct one is costed once.
  double compute(const Phase& phase) {
    double t = 0;
    for (const auto& op : phase.compute) {
      const std::string& kernel = op.kernel.empty() ? op.family : op.kernel;
      auto [at, fresh] = op_seconds_.try_emplace(kernel + '\n' + op.family + '\n' + op.shape, 0.0);
      if (fresh) {
        auto e = compute_.predict(kernel, dtype_, op.flops, op.bytes, op.family, op.shape);
        if (!e.calibrated) note("no operator model for '" + kernel + "' " + dtype_ + ": roofline bound used");
        at->second = e.seconds;
      }
      t += at->second;
    }
    return t;
  }

  double comm(const CommOp& op) {
    if (op.name.empty() || op.ranks < 2 || op.bytes <= 0) return 0;
    const std::string& level = op.kind == "tp" ? levels_.tp : op.kind == "dp" ? levels_.dp : levels_.pp;
    auto [at, fresh] = comm_seconds_.try_emplace(
        {op.collective + '\n' + op.kind + '\n' + level, op.bytes, op.ranks}, 0.0);
    if (fresh) {
      auto p = comm_.predict(op.collective, op.bytes, op.ranks, level, dtype_);
      if (p.extrapolated_ranks || p.extrapolated_bytes)
        note(op.collective + " (" + op.kind + ") at " + std::to_string(op.ranks) + " ranks: " +
             (p.extrapolated_ranks ? p.view + " view, extrapolated in ranks" : "extrapolated in size"));
      at->second = p.seconds;
    }
    return at->second;
  }

  double comm(const std::vector<CommOp>& ops) {
    double t = 0;
    for (const auto& op : ops) t += comm(op);
    return t;
  }

 private:
  void note(const std::string& text) {
    if (seen_.insert(text).second) notes_.push_back(text);
  }
  const CommModel& comm_;
  const ComputeModel& compute_;
  const LevelMap& levels_;
  const std::string& dtype_;
  std::vector<std::string>& notes_;
  std::set<std::string> seen_;
  std::map<std::string, double> op_seconds_;
  std::map<std::tuple<std::string, double, int>, double> comm_seconds_;
};

}  // namespace

LevelMap placed_levels(const TrainConfig& c, int ranks_per_node, const CommModel& comm,
                       std::vector<std::string>* notes) {
  if (ranks_per_node < 1) throw UsageError("--ranks-per-node " + std::to_string(ranks_per_node) + ": must be >= 1");
  auto level = [&](const char* kind, long long span) -> std::string {
    const std::string want = span <= ranks_per_node ? "intra" : "inter";
    for (const auto& f : comm.fits)
      if (f.level == want) return want;
    if (notes)
      notes->push_back(std::string(kind) + " traffic " + (want == "intra" ? "inside a node" : "across nodes") +
                       ": the model has no '" + want + "' level, costed on 'world'");
    return "world";
  };
  LevelMap m;
  m.tp = level("tp", c.tp);
  m.dp = level("dp", static_cast<long long>(c.tp) * c.dp);
  m.pp = level("pp", static_cast<long long>(c.tp) * c.dp * c.pp);
  return m;
}

StepPrediction predict_step(const StepPlan& plan, const CommModel& comm, const ComputeModel& compute,
                            const LevelMap& levels) {
  StepPrediction out;
  const auto& cfg = plan.config;
  Coster cost(comm, compute, levels, cfg.dtype, out.notes);
  out.micro_batches = cfg.micro_batches();
  const int S = static_cast<int>(plan.stages.size()), M = out.micro_batches;

  for (const auto& st : plan.stages) {
    StageTimes t;
    t.forward_compute = cost.compute(st.forward);
    t.backward_compute = cost.compute(st.backward);
    t.tp_comm = cost.comm(st.forward.comm) + cost.comm(st.backward.comm);
    t.pp_comm = cost.comm(st.send_activation) + cost.comm(st.send_gradient);
    t.dp_total = cost.comm(st.dp_sync);
    if (cfg.overlap_dp && !st.dp_sync.empty()) {
      // Buckets become ready during the last micro-batch's backward; the last bucket
      // can only start after it.
      double last = cost.comm(st.dp_sync.back());
      t.dp_exposed = std::max(last, t.dp_total - t.backward_compute);
    } else {
      t.dp_exposed = t.dp_total;
    }
    t.optimizer = cost.compute(st.optimizer) + cost.comm(st.optimizer.comm);
    out.stages.push_back(t);
  }

  int crit = 0, tail = 0;
  for (int s = 1; s < S; ++s) {
    if (out.stages[s].per_micro_batch() > out.stages[crit].per_micro_batch()) crit = s;
    if (out.stages[s].dp_exposed + out.stages[s].optimizer > out.stages[tail].dp_exposed + out.stages[tail].optimizer)
      tail = s;
  }
  out.critical_stage = crit;
  const StageTimes& c = out.stages[crit];
  const StageTimes& e = out.stages[tail];
  out.breakdown = {
      {"forward compute", M * c.forward_compute},
      {"backward compute", M * c.backward_compute},
      {"tp communication", M * c.tp_comm},
      {"pp communication", M * c.pp_comm},
      {"pipeline bubble", (S - 1) * c.per_micro_batch()},
      {"dp communication (exposed)", e.dp_exposed},
      {"optimizer", e.optimizer},
  };
  for (const auto& [name, t] : out.breakdown) out.total += t;
  out.bubble_fraction = double(S - 1) / double(M + S - 1);
  return out;
}

}  // namespace sextant::model
