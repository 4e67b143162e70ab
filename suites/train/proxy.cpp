// run_training: sets up one rank's part of the grid (layout, parameters, stage, DP sync,
// optimizer) and runs the steps: the pipeline schedule's actions with their
// point-to-point transfers, the gradient sync, the optimizer, timed per phase.
#include "suites/train/proxy.hpp"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "models/pipeline_schedule.hpp"
#include "suites/train/data.hpp"
#include "suites/train/dp_sync.hpp"
#include "suites/train/layout.hpp"
#include "suites/train/model.hpp"
#include "suites/train/optimizer.hpp"
#include "suites/train/params.hpp"
#include "suites/train/recorder.hpp"

namespace sextant::train {

PhaseTimes TrainResult::mean_phases(int rank) const {
  PhaseTimes m;
  for (int s = 0; s < steps; ++s) {
    const PhaseTimes& p = phases(s, rank);
    m.total += p.total / steps;
    m.forward += p.forward / steps;
    m.backward += p.backward / steps;
    m.optimizer += p.optimizer / steps;
    m.tp_comm += p.tp_comm / steps;
    m.pp_comm += p.pp_comm / steps;
    m.dp_comm += p.dp_comm / steps;
    m.ep_comm += p.ep_comm / steps;
    m.pipeline_idle += p.pipeline_idle / steps;
  }
  return m;
}

double TrainResult::median_step_time() const {
  return stats::median(step_time);
}

namespace {

// Point-to-point transfers between neighbouring stages (same dp and tp rank). Sends are
// non-blocking and completed before their buffer is written again, so no schedule can
// deadlock on them; receives block. A receive's wait is split where the message shows
// up (MPI_Probe): before, the stage is idle (its neighbour still computes: the bubble);
// after, the transfer itself (pp communication).
template <class S>
class PipeComm : public Poller {
 public:
  PipeComm(const Layout& layout, int slots, WaitMode wait, Recorder& rec)
      : comm_(layout.pp_comm), stage_(layout.pp_rank), wait_(wait), rec_(rec),
        act_(slots, MPI_REQUEST_NULL), grad_(slots, MPI_REQUEST_NULL) {}

  static int activation_tag(int micro) { return 2 * micro; }
  static int gradient_tag(int micro) { return 2 * micro + 1; }

  void receive(S* data, std::int64_t n, int from, int tag) {
    const double t0 = MPI_Wtime();
    MPI_Status status;
    if (wait_ == WaitMode::blocking) {
      SEXTANT_MPI_CHECK(MPI_Probe(from, tag, comm_, &status));
    } else {
      for (int found = 0;;) {
        SEXTANT_MPI_CHECK(MPI_Iprobe(from, tag, comm_, &found, &status));
        if (found) break;
        sched_yield();
      }
    }
    const double t1 = MPI_Wtime();
    rec_.add_idle(t1 - t0);
    MPI_Request r;
    SEXTANT_MPI_CHECK(MPI_Irecv(data, int(n), mpi_type<S>(), from, tag, comm_, &r));
    wait(r, wait_);
    rec_.add_comm(CommKind::pp, MPI_Wtime() - t1);
  }

  // Before a slot's buffer is written again: its previous send must be complete.
  void release_activation(int slot) { complete(act_[slot]); }
  void release_gradient(int slot) { complete(grad_[slot]); }

  void send_activation(int slot, const S* data, std::int64_t n, int micro) {
    start(data, n, stage_ + 1, activation_tag(micro), act_[slot]);
  }
  void send_gradient(int slot, const S* data, std::int64_t n, int micro) {
    start(data, n, stage_ - 1, gradient_tag(micro), grad_[slot]);
  }

  // Lets the transfers of sends in flight progress while this stage computes.
  void poll() override {
    if (in_flight_ == 0) return;
    const double t0 = MPI_Wtime();
    in_flight_ = 0;
    for (auto* list : {&act_, &grad_})
      for (auto& r : *list)
        if (r != MPI_REQUEST_NULL) {
          int done = 0;
          SEXTANT_MPI_CHECK(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
          in_flight_ += done ? 0 : 1;
        }
    rec_.add_comm(CommKind::pp, MPI_Wtime() - t0);
  }

  void complete_all() {
    for (auto& r : act_) complete(r);
    for (auto& r : grad_) complete(r);
  }

 private:
  void start(const S* data, std::int64_t n, int to, int tag, MPI_Request& r) {
    const double t0 = MPI_Wtime();
    SEXTANT_MPI_CHECK(MPI_Isend(data, int(n), mpi_type<S>(), to, tag, comm_, &r));
    ++in_flight_;
    rec_.add_comm(CommKind::pp, MPI_Wtime() - t0);
  }
  void complete(MPI_Request& r) {
    if (r == MPI_REQUEST_NULL) return;
    const double t0 = MPI_Wtime();
    wait(r, wait_);
    rec_.add_comm(CommKind::pp, MPI_Wtime() - t0);
  }

  MPI_Comm comm_;
  int stage_;
  WaitMode wait_;
  Recorder& rec_;
  std::vector<MPI_Request> act_, grad_;
  int in_flight_ = 0;
};

// What a send of the pipeline is in the plan's vocabulary (one-way message: pingpong).
template <class S>
model::CommOp send_op(int stage, const char* what, std::int64_t elements) {
  return {"stage" + std::to_string(stage) + ".send_" + what, model::Traffic::pp, "pingpong", double(elements) * sizeof(S), 2};
}

// S: the step's element type; W: the optimizer's (wider: mixed precision).
template <class S, class W>
TrainResult run_typed(const model::TrainConfig& c, const TrainRunOptions& o, MPI_Comm world) {
  if (o.gradient_norm && c.ranks() != 1)
    throw UsageError("the gradient norm (a test hook) is recorded on one rank only");
  Layout layout(c, world);
  const int M = c.micro_batches();
  const std::int64_t T = std::int64_t(c.micro_batch) * c.seq;
  if (T * std::max<std::int64_t>(c.hidden * 4, c.vocab) > INT_MAX)
    throw UsageError("--micro-batch x --seq x max(4 --hidden, --vocab) exceeds the MPI count limit (2^31 - 1)");

  // This stage's layers, as the plan splits them.
  const model::StepPlan plan = model::plan_step(c);
  const model::StagePlan& mine = plan.stages[layout.pp_rank];
  const bool sharded = c.zero >= 1 && c.dp > 1;

  ParamStore<S> store(flat_layout(stage_parameter_specs(c, mine.layers_first, mine.layers_count,
                                                        layout.first_stage(), layout.last_stage(), layout.ep_rank()),
                                  c.tp, c.bucket_bytes, int(sizeof(S)), sharded ? c.dp : 1, sharded && c.zero == 3,
                                  c.ep > 1),
                      layout.tp_rank, c.tp, o.seed, c.hidden);
  for (const auto& b : store.layout().buckets)
    if (b.elements > INT_MAX)
      throw UsageError("a gradient bucket of " + std::to_string(b.elements) +
                       " elements exceeds the MPI count limit (2^31 - 1)");
  Recorder rec;
  const int slots = model::slots_needed(c.schedule, c.pp, layout.pp_rank, M);
  Stage<S> stage(c, layout, rec, store, slots, mine.layers_first, mine.layers_count, o.wait);
  stage.loss_scale = 1.0 / (double(c.global_batch) * c.seq);
  DpSync<S> dp(store, layout, c.zero, c.overlap_dp, o.wait, rec, o.poison_released, c.staleness,
               c.compress != model::Compression::none);
  stage.units = dp.units();
  OptimizerStep<S, W> optimizer(c, o, store, dp, layout, rec);
  PipeComm<S> pipe(layout, slots, o.wait, rec);
  rec.add_poller(&pipe);
  if (dp.overlapped() || (dp.stale() && layout.dp > 1)) rec.add_poller(&dp);
  const auto actions = model::schedule_actions(c.schedule, c.pp, layout.pp_rank, M);
  const auto is_backward = [](const model::PipelineAction& a) { return a.kind == model::PipelineAction::backward; };
  const int last_backward = int(std::find_if(actions.rbegin(), actions.rend(), is_backward).base() - actions.begin()) - 1;

  TokenMatrix rows("sextant::train::rows", M, T), targets("sextant::train::targets", M, T);
  stage.set_data(rows, targets);
  const std::int64_t act = stage.tokens() * c.hidden;  // a pipeline message: the stage's tokens (T / tp with sp)
  const int vocab_shard = c.vocab / c.tp;

  TrainResult result;
  result.config = c;
  result.ranks = c.ranks();
  result.warmup = o.warmup;
  const int max_steps = std::max(o.steps, o.max_steps);
  double measured_seconds = 0;  // sum over measured steps of the ranks' mean step time
  std::vector<PhaseTimes> mine_per_step;
  model::StagePlan& traced = result.executed;
  traced.stage = layout.pp_rank;
  traced.layers_first = mine.layers_first;
  traced.layers_count = mine.layers_count;
  traced.parameters = double(store.layout().parameters);

  // The stop rule reads only values every rank has (the ranks' mean step times), so all
  // ranks stop after the same step.
  std::vector<double> mean_step_times;
  const auto precise_enough = [&] {
    if (o.precision <= 0) return true;
    stats::StopRule rule;
    rule.rel_half_width = o.precision;
    rule.budget_seconds = o.max_seconds > 0 ? o.max_seconds : std::numeric_limits<double>::infinity();
    rule.min_samples = 1;
    rule.max_samples = std::numeric_limits<std::size_t>::max();
    return stats::should_stop(rule, mean_step_times, measured_seconds).has_value();
  };
  int measured = 0;
  for (int step = 0; step < o.warmup + max_steps; ++step) {
    if (step >= o.warmup && measured >= o.steps && measured_seconds >= o.min_seconds && precise_enough()) break;
    // Data staging (a data loader's job) is not part of the step.
    fill_step_data(rows, targets, o.seed, o.repeat_first_batch ? 0 : step, c.global_batch, layout.dp_rank, c.micro_batch, c.seq, c.vocab,
                   vocab_shard * layout.tp_rank, vocab_shard);
    Kokkos::fence();
    barrier(layout.world, o.wait);

    // Traced: the first step that runs all of the plan (a stale one applies nothing before).
    const bool tracing = o.trace && step == c.staleness;
    rec.start_step();
    rec.set_profiling(o.profile && step >= o.warmup);
    rec.trace_dp(tracing ? &traced.dp_sync : nullptr);
    dp.begin_step();
    const double t0 = MPI_Wtime();
    double loss = 0;
    for (int i = 0; i < int(actions.size()); ++i) {
      const model::PipelineAction a = actions[i];
      const int slot = a.micro % slots;
      const bool trace_micro = tracing && a.micro == 0;
      if (a.kind == model::PipelineAction::forward) {
        rec.set_pass(Pass::forward);
        pipe.release_activation(slot);
        if (!layout.first_stage())
          pipe.receive(stage.input(slot).data(), act, layout.pp_rank - 1, pipe.activation_tag(a.micro));
        rec.trace_phase(trace_micro ? &traced.forward : nullptr);
        stage.forward(a.micro, slot);
        rec.trace_phase(nullptr);
        if (!layout.last_stage()) {
          pipe.send_activation(slot, stage.output(slot).data(), act, a.micro);
          if (trace_micro) traced.send_activation = send_op<S>(layout.pp_rank, "activation", act);
        }
      } else {
        rec.set_pass(Pass::backward);
        pipe.release_gradient(slot);
        if (!layout.last_stage())
          pipe.receive(stage.grad_input().data(), act, layout.pp_rank + 1, pipe.gradient_tag(a.micro));
        rec.trace_phase(trace_micro ? &traced.backward : nullptr);
        loss += stage.backward(a.micro, slot, i == last_backward && dp.overlapped() ? &dp : nullptr);
        rec.trace_phase(nullptr);
        if (!layout.first_stage()) {
          pipe.send_gradient(slot, stage.grad_output(slot).data(), act, a.micro);
          if (trace_micro) traced.send_gradient = send_op<S>(layout.pp_rank, "gradient", act);
        }
      }
    }
    pipe.complete_all();
    rec.set_pass(Pass::backward);
    dp.finish();
    if (o.gradient_norm) {
      const auto g = store.grads();
      double norm2 = 0;
      Kokkos::parallel_reduce(
          "sextant::train::gradient_norm", Kokkos::RangePolicy<Exec>(0, g.extent(0)),
          KOKKOS_LAMBDA(const std::int64_t i, double& sum) { sum += double(g(i)) * double(g(i)); }, norm2);
      result.gradient_norm2.push_back(norm2);
    }
    rec.trace_phase(tracing ? &traced.optimizer : nullptr);
    optimizer.step(step + 1);
    rec.trace_phase(nullptr);
    rec.trace_dp(nullptr);
    Kokkos::fence();
    rec.times().total = MPI_Wtime() - t0;
    if (step >= o.warmup) mine_per_step.push_back(rec.times());

    // The loss: every token's, once (the last stage's tp rank 0 of each dp replica); and
    // the ranks' step times summed, the same number on every rank for the stop rule.
    double mine_sums[2] = {layout.last_stage() && layout.tp_rank == 0 ? loss : 0, rec.times().total}, sums[2];
    allreduce(mine_sums, sums, 2, MPI_DOUBLE, MPI_SUM, layout.world, o.wait);
    result.loss.push_back(sums[0] / (double(c.global_batch) * c.seq));
    if (step >= o.warmup) {
      ++measured;
      measured_seconds += sums[1] / result.ranks;
      mean_step_times.push_back(sums[1] / result.ranks);
    }
  }
  result.steps = measured;
  dp.drain();

  result.kernels = rec.profile();

  // Every rank's phases of every measured step, to every rank.
  constexpr int fields = sizeof(PhaseTimes) / sizeof(double);
  static_assert(sizeof(PhaseTimes) == fields * sizeof(double), "PhaseTimes holds doubles only");
  result.samples.resize(std::size_t(result.steps) * result.ranks);
  std::vector<PhaseTimes> gathered(result.samples.size());
  if (result.steps > 0) {
    MPI_Request r;
    SEXTANT_MPI_CHECK(MPI_Iallgather(mine_per_step.data(), result.steps * fields, MPI_DOUBLE, gathered.data(),
                                     result.steps * fields, MPI_DOUBLE, layout.world, &r));
    wait(r, o.wait);
  }
  for (int rank = 0; rank < result.ranks; ++rank)
    for (int s = 0; s < result.steps; ++s)
      result.samples[std::size_t(s) * result.ranks + rank] = gathered[std::size_t(rank) * result.steps + s];
  for (int s = 0; s < result.steps; ++s) {
    double worst = 0;
    for (int rank = 0; rank < result.ranks; ++rank) worst = std::max(worst, result.phases(s, rank).total);
    result.step_time.push_back(worst);
  }
  for (int rank = 0; rank < result.ranks; ++rank) {
    RankCoords rc;
    rc.tp = rank % c.tp;
    rc.dp = rank / c.tp % c.dp;
    rc.pp = rank / (c.tp * c.dp);
    result.coords.push_back(rc);
  }
  return result;
}

}  // namespace

TrainResult run_training(const model::TrainConfig& config, const TrainRunOptions& options, MPI_Comm world) {
  config.validate();
  if (options.steps < 0 || options.warmup < 0)
    throw UsageError("--steps and --warmup must be >= 0");
  if (config.dense == model::DensePath::vendor && default_dense_path() != model::DensePath::vendor)
    throw UsageError("dense path 'vendor': this sextant was built without Kokkos Kernels (KokkosKernels_ROOT)");
  if (config.dtype == "float64") return run_typed<double, double>(config, options, world);
  if (config.mixed()) return run_typed<float, double>(config, options, world);
  return run_typed<float, float>(config, options, world);
}

model::DensePath default_dense_path() {
#ifdef SEXTANT_HAVE_KOKKOS_KERNELS
  return model::DensePath::vendor;
#else
  return model::DensePath::portable;
#endif
}

}  // namespace sextant::train
