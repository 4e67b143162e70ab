#include "models/step_predictor.hpp"

#include "core/error.hpp"
#include "models/cache_state.hpp"
#include "models/pipeline_schedule.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

namespace sextant::model {
namespace {

struct Message {
  double latency = 0, transfer = 0;
};

class Coster {
 public:
  Coster(const CommModel& comm, const ComputeModel& compute, const LevelMap& levels, const std::string& dtype,
         std::vector<std::string>& notes)
      : comm_(comm), compute_(compute), levels_(levels), dtype_(dtype), notes_(notes) {}

  // Layers repeat their operators and collectives: each distinct one is costed once.
  // An operator measured hot and cold is costed between the two by the cache state the
  // step leaves it (misses: by op name; absent where the model cannot tell).
  double compute(const Phase& phase, const std::map<std::string, OperandMisses>& misses = {}) {
    double t = 0;
    for (double c : op_costs(phase, misses)) t += c;
    return t;
  }

  // Each compute op's cost, in the phase's order.
  std::vector<double> op_costs(const Phase& phase, const std::map<std::string, OperandMisses>& misses) {
    std::vector<double> out;
    for (const auto& op : phase.compute) {
      const std::string& kernel = op.kernel.empty() ? op.family : op.kernel;
      const std::string& dtype = op.dtype.empty() ? dtype_ : op.dtype;
      auto [at, fresh] = op_costs_.try_emplace(kernel + '\n' + op.family + '\n' + op.shape + '\n' + dtype);
      if (fresh) {
        auto e = compute_.predict(kernel, dtype, op.flops, op.bytes, op.family, op.shape);
        if (!e.calibrated) note("no operator model for '" + kernel + "' " + dtype + ": roofline bound used");
        at->second.seconds = e.seconds;
        at->second.bounds = compute_.cache_bounds(kernel, dtype, op.shape, op.flops, op.bytes, op.family);
      }
      const OpCost& c = at->second;
      const auto m = misses.find(op.name);
      out.push_back(c.bounds && m != misses.end() ? c.bounds->in_step(m->second) : c.seconds);
    }
    return out;
  }

  double comm(const CommOp& op) { return costed(op).seconds; }

  // A point-to-point message between stages: what the receiver waits for before it
  // sees the message (the latency part) and what receiving it takes (the transfer part).
  // Measured where the model has late_receive: what a receiver that posts after the
  // message was sent pays from its post (a rendezvous protocol only starts the transfer
  // then, an eager one has delivered it); else the Hockney split, beta n.
  Message message(const CommOp& op) {
    const auto& c = costed(op);
    if (op.name.empty() || op.ranks < 2 || op.bytes <= 0) return {};
    const std::string& level = levels_.of(op.traffic);
    if (comm_.find("late_receive", level, dtype_, op.ranks)) {
      auto [at, fresh] = receive_costs_.try_emplace({level, op.bytes});
      if (fresh) at->second = comm_.predict("late_receive", op.bytes, op.ranks, level, dtype_).seconds;
      const double receive = std::clamp(at->second, 0.0, c.seconds);
      return {c.seconds - receive, receive};
    }
    return {c.seconds - c.transfer, c.transfer};
  }

  double comm(const std::vector<CommOp>& ops) {
    double t = 0;
    for (const auto& op : ops) t += comm(op);
    return t;
  }
  // Collectives posted together and progressed together (the stale sync's buckets,
  // started at once after the update): their latencies overlap and their transfers
  // share the links, so they take the longest latency part plus every transfer part
  // (docs/train-suite.md has the measurements behind it).
  double concurrent(const std::vector<CommOp>& ops) {
    double latency = 0, transfers = 0;
    for (const auto& op : ops) {
      const auto& c = costed(op);
      latency = std::max(latency, c.seconds - c.transfer);
      transfers += c.transfer;
    }
    return latency + transfers;
  }
  double comm(const std::vector<CommOp>& ops, Traffic traffic) {
    double t = 0;
    for (const auto& op : ops)
      if (op.traffic == traffic) t += comm(op);
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
  struct Costed {
    double seconds = 0, transfer = 0;  // transfer: the size-dependent (beta) part
  };
  // A collective issued after compute meets the transport idle: costed by the model's
  // isolated form where it has one at this rank count and level; one issued right
  // behind another (back_to_back), and any the model measured back to back only, by
  // the plain (back-to-back) fit.
  std::string form(const CommOp& op, const std::string& level, const std::string& dtype) const {
    if (op.back_to_back) return op.collective;
    const std::string isolated = isolated_form(op.collective);
    const CommFit* f = comm_.find(isolated, level, dtype, op.ranks);
    return f && f->ranks == op.ranks ? isolated : op.collective;
  }
  // The op's own element type where the model measured its collective in it; else the
  // step's, at the op's bytes (said once).
  const std::string& dtype_of(const CommOp& op, const std::string& level) {
    if (op.dtype.empty() || op.dtype == dtype_) return dtype_;
    if (comm_.find(op.collective, level, op.dtype, op.ranks)) return op.dtype;
    note(op.collective + " in " + op.dtype + ": not in the model, costed as " + dtype_ + " at its bytes");
    return dtype_;
  }
  const Costed& costed(const CommOp& op) {
    static const Costed none;
    if (op.name.empty() || op.ranks < 2 || op.bytes <= 0) return none;
    const std::string& level = levels_.of(op.traffic);
    const std::string& dtype = dtype_of(op, level);
    const std::string benchmark = form(op, level, dtype);
    auto [at, fresh] =
        comm_costs_.try_emplace({benchmark + '\n' + to_string(op.traffic) + '\n' + level + '\n' + dtype, op.bytes, op.ranks});
    if (fresh) {
      auto p = comm_.predict(benchmark, op.bytes, op.ranks, level, dtype);
      if (p.extrapolated_ranks || p.extrapolated_bytes)
        note(op.collective + " (" + to_string(op.traffic) + ") at " + std::to_string(op.ranks) + " ranks: " +
             (p.extrapolated_ranks ? std::string(to_string(p.view)) + " view, extrapolated in ranks" : "extrapolated in size"));
      at->second = {p.seconds, std::clamp(p.beta_part, 0.0, p.seconds)};
    }
    return at->second;
  }

  struct OpCost {
    double seconds = 0;  // the compute model's answer (the most flushed measurement)
    std::optional<ComputeModel::CacheBounds> bounds;
  };
  std::map<std::string, OpCost> op_costs_;
  std::map<std::tuple<std::string, double, int>, Costed> comm_costs_;
  std::map<std::pair<std::string, double>, double> receive_costs_;  // late_receive by level and bytes
};

// The partners' wait of each blocking collective of a phase (SyncModel): the compute
// since the group's previous synchronisation, the collective issued after the compute op
// its `after` names. The phase repeats (micro-batch after micro-batch), so its first
// collective waits for the compute after the last one as well. Returns the waits by the
// traffic that waits and the compute after the phase's last collective (the tail).
struct PhaseSync {
  double tp_waits = 0, dp_waits = 0, ep_waits = 0, tail = 0;
};
PhaseSync phase_sync(const Phase& phase, const std::vector<double>& costs, const SyncModel* sync) {
  PhaseSync out;
  double since = 0;
  std::size_t next = 0;
  std::vector<std::pair<double, const CommOp*>> intervals;  // compute before each collective
  const auto issue = [&](const std::string& after) {
    for (; next < phase.comm.size() && phase.comm[next].after == after; ++next) {
      intervals.push_back({since, &phase.comm[next]});
      since = 0;
    }
  };
  issue("");
  for (std::size_t i = 0; i < phase.compute.size(); ++i) {
    since += costs[i];
    issue(phase.compute[i].name);
  }
  if (next != phase.comm.size())
    throw Error("predict_step: collective '" + phase.comm[next].name + "' follows no op of its phase ('" +
                phase.comm[next].after + "')");
  out.tail = since;
  if (!sync) return out;
  for (std::size_t k = 0; k < intervals.size(); ++k) {
    const CommOp& op = *intervals[k].second;
    const double w = sync->wait(k == 0 ? intervals[k].first + out.tail : intervals[k].first, op.ranks);
    (op.traffic == Traffic::tp ? out.tp_waits : op.traffic == Traffic::ep ? out.ep_waits : out.dp_waits) += w;
  }
  return out;
}

// Where the step leaves each operand of the stage's ops (the cache walk), when the model
// measured both what the operators cost in each cache state and what the host retains.
std::map<std::string, OperandMisses> stage_misses(const StepPlan& plan, int stage, const ComputeModel& compute,
                                                  CacheWalkMemo* walks) {
  const auto retention = compute.cache_retention();
  if (!compute.has_cache_bounds() || !retention) return {};
  return operand_misses(plan, stage, *retention, walks, hot_seconds(compute, plan.config.dtype));
}

}  // namespace

void choose_dense_path(TrainConfig& config, const std::string& text, const ComputeModel& compute) {
  if (text.find("dense=") == std::string::npos) config.dense = compute.measured_dense_path();
}

std::map<std::string, double> stage_op_seconds(const StepPlan& plan, int stage, const ComputeModel& compute) {
  static const CommModel no_comm;
  std::vector<std::string> notes;
  Coster cost(no_comm, compute, LevelMap{}, plan.config.dtype, notes);
  const StagePlan& st = plan.stages.at(stage);
  const auto misses = stage_misses(plan, stage, compute, nullptr);
  std::map<std::string, double> out;
  for (const Phase* phase : {&st.forward, &st.backward, &st.optimizer}) {
    const auto costs = cost.op_costs(*phase, misses);
    for (std::size_t i = 0; i < costs.size(); ++i) out[phase->compute[i].name] += costs[i];
  }
  return out;
}

OpSeconds hot_seconds(const ComputeModel& compute, const std::string& dtype) {
  // The walk asks for every call of every layer: each distinct op is looked up once (the
  // lookup parses the model's shapes).
  auto known = std::make_shared<std::map<std::string, double>>();
  return [&compute, step_dtype = dtype, known](const ComputeOp& op) {
    const std::string& kernel = op.kernel.empty() ? op.family : op.kernel;
    const std::string& dtype = op.dtype.empty() ? step_dtype : op.dtype;
    auto [at, fresh] = known->try_emplace(kernel + '\n' + op.family + '\n' + op.shape + '\n' + dtype);
    if (fresh) {
      const auto bounds = compute.cache_bounds(kernel, dtype, op.shape, op.flops, op.bytes, op.family);
      at->second = bounds ? bounds->hot : compute.predict(kernel, dtype, op.flops, op.bytes, op.family, op.shape).seconds;
    }
    return at->second;
  };
}

double op_cost_in_step(const ComputeModel& compute, const std::string& step_dtype, const ComputeOp& op,
                       const std::map<std::string, OperandMisses>& misses) {
  const std::string& kernel = op.kernel.empty() ? op.family : op.kernel;
  const std::string& dtype = op.dtype.empty() ? step_dtype : op.dtype;
  const auto bounds = compute.cache_bounds(kernel, dtype, op.shape, op.flops, op.bytes, op.family);
  const auto m = misses.find(op.name);
  if (bounds && m != misses.end()) return bounds->in_step(m->second);
  return compute.predict(kernel, dtype, op.flops, op.bytes, op.family, op.shape).seconds;
}

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
  m.ep = m.dp;  // the experts' all-to-alls run on the dp group
  return m;
}

StepPrediction predict_step(const StepPlan& plan, const CommModel& comm, const ComputeModel& compute,
                            const LevelMap& levels, const SyncModel* sync, CacheWalkMemo* walks) {
  StepPrediction out;
  const auto& cfg = plan.config;
  Coster cost(comm, compute, levels, cfg.dtype, out.notes);
  out.micro_batches = cfg.micro_batches();
  const int S = static_cast<int>(plan.stages.size()), M = out.micro_batches;
  if (S < 1) throw Error("predict_step: the plan has no stages");
  const std::string hidden_sync_note =
      "stale gradient sync: what moving it costs the host behind compute (inside the polls) is not charged";

  // The cache model needs both measurements of the operators and what the host keeps
  // at a reuse distance.
  if (compute.has_cache_bounds() && !compute.cache_retention())
    out.notes.push_back("no cache retention measured and no memory level in the working-set sweep: operators costed cold");
  for (const auto& st : plan.stages) {
    StageTimes t;
    const auto misses = stage_misses(plan, st.stage, compute, walks);
    const auto forward_costs = cost.op_costs(st.forward, misses), backward_costs = cost.op_costs(st.backward, misses);
    for (double c : forward_costs) t.forward_compute += c;
    for (double c : backward_costs) t.backward_compute += c;
    const auto forward_sync = phase_sync(st.forward, forward_costs, sync), backward_sync = phase_sync(st.backward, backward_costs, sync);
    t.forward_tp = cost.comm(st.forward.comm, Traffic::tp) + forward_sync.tp_waits;
    t.backward_tp = cost.comm(st.backward.comm, Traffic::tp) + backward_sync.tp_waits;
    t.forward_dp = cost.comm(st.forward.comm, Traffic::dp) + forward_sync.dp_waits;
    t.backward_dp = cost.comm(st.backward.comm, Traffic::dp) + backward_sync.dp_waits;
    t.forward_ep = cost.comm(st.forward.comm, Traffic::ep) + forward_sync.ep_waits;
    t.backward_ep = cost.comm(st.backward.comm, Traffic::ep) + backward_sync.ep_waits;
    // The stale sync's buckets start together after the update; the others one by one
    // (overlapped: as backward makes them ready).
    t.dp_total = cfg.staleness > 0 ? cost.concurrent(st.dp_sync) : cost.comm(st.dp_sync);
    if (cfg.staleness > 0) {
      // Waited for `staleness` steps later: behind that many steps' forwards and
      // backwards, the partners' skew absorbed with it.
      const double behind = cfg.staleness * M *
                            (t.forward_compute + t.backward_compute + t.forward_tp + t.backward_tp);
      t.dp_exposed = std::max(0.0, t.dp_total - behind);
      if (!st.dp_sync.empty() && std::find(out.notes.begin(), out.notes.end(), hidden_sync_note) == out.notes.end())
        out.notes.push_back(hidden_sync_note);
    } else if (cfg.overlap_dp && !st.dp_sync.empty()) {
      // Buckets become ready during the last micro-batch's backward; the last bucket
      // can only start after it.
      double last = cost.comm(st.dp_sync.back());
      t.dp_exposed = std::max(last, t.dp_total - t.backward_compute);
    } else {
      t.dp_exposed = t.dp_total;
    }
    // The gradient sync waits for its partners too (overlapped or not: the last bucket
    // completes when the slowest rank's backward does): for the compute since the
    // group's last collective, the backward's tail after its last tp collective, or with
    // none the whole step's forwards and backwards.
    // The compressed sync runs in the optimizer step, its first allreduce right after the
    // conversion: the partners are met there.
    const CommOp* first_sync = !st.dp_sync.empty() ? &st.dp_sync.front() : nullptr;
    if (cfg.compress != Compression::none)
      for (const auto& op : st.optimizer.comm)
        if (op.traffic == Traffic::dp) {
          first_sync = &op;
          break;
        }
    if (sync && first_sync && cfg.staleness == 0) {
      const double wait = sync->wait(
          st.backward.comm.empty() ? M * (t.forward_compute + t.backward_compute) : backward_sync.tail, first_sync->ranks);
      t.dp_total += wait;
      t.dp_exposed += wait;
    }
    // The optimizer's own dp collectives (ZeRO-1's allgathers, the compressed sync) are
    // on the step's path as its dp communication, which is where the proxy counts them.
    const double optimizer_dp = cost.comm(st.optimizer.comm, Traffic::dp);
    t.dp_total += optimizer_dp;
    t.dp_exposed += optimizer_dp;
    t.optimizer = cost.compute(st.optimizer, misses) + cost.comm(st.optimizer.comm) - optimizer_dp;
    out.stages.push_back(t);
  }

  // Replay every stage's action list. A stage runs its next action as soon as that
  // action's input exists (the neighbour's action ended); the lists are deadlock-free
  // (unit.train_schedule), so each sweep over the stages makes progress.
  std::vector<std::vector<PipelineAction>> actions(S);
  std::vector<std::size_t> next(S, 0);
  std::vector<double> free_at(S, 0);
  std::vector<std::vector<double>> forward_end(S, std::vector<double>(M, -1)), backward_end = forward_end;
  std::vector<Message> activation(S), gradient(S);  // received by stage s
  // The host's share of the messages a stage's forward and backward send and receive
  // (SyncModel::overhead: measured on messages that arrive while the rank computes).
  std::vector<double> forward_send(S, 0), forward_receive(S, 0), backward_send(S, 0), backward_receive(S, 0);
  const auto overhead = [&](const CommOp& op) { return sync && !op.name.empty() ? sync->overhead(op.bytes) : 0.0; };
  for (int s = 0; s < S; ++s) {
    actions[s] = schedule_actions(cfg.schedule, S, s, M);
    if (s > 0) activation[s] = cost.message(plan.stages[s - 1].send_activation);
    if (s + 1 < S) gradient[s] = cost.message(plan.stages[s + 1].send_gradient);
    if (s > 0) forward_receive[s] = overhead(plan.stages[s - 1].send_activation), backward_send[s] = overhead(plan.stages[s].send_gradient);
    if (s + 1 < S) forward_send[s] = overhead(plan.stages[s].send_activation), backward_receive[s] = overhead(plan.stages[s + 1].send_gradient);
  }
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < S; ++s) {
      StageTimes& t = out.stages[s];
      for (; next[s] < actions[s].size(); ++next[s], progressed = true) {
        const PipelineAction a = actions[s][next[s]];
        const bool forward = a.kind == PipelineAction::forward;
        // The input: the previous stage's forward, the next stage's backward; the first
        // stage's forward reads data, the last stage's backward its own forward.
        const bool local = forward ? s == 0 : s == S - 1;
        const double sent = local ? 0 : forward ? forward_end[s - 1][a.micro] : backward_end[s + 1][a.micro];
        if (sent < 0) break;  // not produced yet
        const Message in = local ? Message{} : forward ? activation[s] : gradient[s];
        const double arrives = sent + in.latency;
        const double start = std::max(free_at[s], arrives);
        t.waits += start - free_at[s];
        t.transfers += in.transfer;
        // A message that arrives while its stage still computes the previous action costs
        // that compute its receive; one the stage waits for arrives while it idles in MPI
        // (in the bubble, or behind a slower neighbour) and costs no compute.
        const bool arrives_busy = !local && free_at[s] > arrives;
        const double host = (forward ? forward_send[s] : backward_send[s]) +
                            (arrives_busy ? (forward ? forward_receive[s] : backward_receive[s]) : 0.0);
        t.message_overhead += host;
        free_at[s] = start + in.transfer + host +
                     (forward ? t.forward_compute + t.forward_tp + t.forward_dp + t.forward_ep
                              : t.backward_compute + t.backward_tp + t.backward_dp + t.backward_ep);
        (forward ? forward_end : backward_end)[s][a.micro] = free_at[s];
      }
    }
  }
  for (int s = 0; s < S; ++s)
    if (next[s] < actions[s].size())
      throw Error("predict_step: the pipeline schedule of stage " + std::to_string(s) + " cannot proceed");

  int last = 0;
  for (int s = 0; s < S; ++s) {
    StageTimes& t = out.stages[s];
    t.finish = free_at[s] + t.dp_exposed + t.optimizer;
    if (t.finish > out.stages[last].finish) last = s;
  }
  out.critical_stage = last;
  const StageTimes& c = out.stages[last];
  out.breakdown = {
      {"forward compute", M * c.forward_compute},
      {"backward compute", M * c.backward_compute},
      {"tp communication", M * (c.forward_tp + c.backward_tp)},
      {"ep communication", M * (c.forward_ep + c.backward_ep)},
      {"pp communication", c.transfers + c.message_overhead},
      {"pipeline bubble", c.waits},
      {"dp communication (exposed)", c.dp_exposed + M * (c.forward_dp + c.backward_dp)},
      {"optimizer", c.optimizer},
  };
  out.total = c.finish;
  out.bubble_fraction = double(S - 1) / double(M + S - 1);
  return out;
}

}  // namespace sextant::model
