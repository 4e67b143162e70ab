#include "suites/train/pipeline.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "models/model_file.hpp"
#include "models/train_plan.hpp"
#include "suites/comm/benchmark.hpp"
#include "suites/common/json_results.hpp"
#include "suites/common/mpi.hpp"
#include "suites/common/results.hpp"
#include "suites/common/runtime.hpp"
#include "suites/train/suite.hpp"
#include "suites/train/sync_skew.hpp"

namespace sextant::train {
namespace {

// One configuration in `predict --train`'s spelling, named for its layout
// ("dp2_zero3.custom", "tp2_sp_pp2_1f1b_recompute_full.custom", "dp2_moe4_ep2.custom").
SweepEntry given_configuration(int ranks, const PipelineOptions& o) {
  if (!o.configs.empty() || !o.model_sizes.empty() || !o.recompute.empty())
    throw UsageError("--train gives the one configuration to run: leave out --configs, --model-sizes and --recompute");
  SweepEntry e{"", model::parse_train_config(o.train)};
  model::TrainConfig& c = e.config;
  if (c.ranks() != ranks)
    throw UsageError("--train: dp x tp x pp = " + std::to_string(c.ranks()) + ", but the run has " + std::to_string(ranks) +
                     " ranks");
  if (o.train.find("dense=") == std::string::npos) c.dense = o.dense.empty() ? default_dense_path() : model::parse_dense_path(o.dense);
  for (auto [key, n] : {std::pair{"dp", c.dp}, {"tp", c.tp}, {"pp", c.pp}}) {
    if (n > 1) e.name += (e.name.empty() ? "" : "_") + std::string(key) + std::to_string(n);
    if (key == std::string("tp") && c.sp) e.name += "_sp";
  }
  if (c.pp > 1) e.name += c.schedule == model::Schedule::gpipe ? "_gpipe" : "_1f1b";
  if (c.zero > 0 && c.dp > 1) e.name += "_zero" + std::to_string(c.zero);
  if (c.recompute != model::Recompute::none) e.name += std::string("_recompute_") + model::to_string(c.recompute);
  if (c.experts > 0) e.name += "_moe" + std::to_string(c.experts) + (c.ep > 1 ? "_ep" + std::to_string(c.ep) : "");
  e.name = (e.name.empty() ? "single1" : e.name) + ".custom";
  return e;
}

std::vector<SweepEntry> chosen_sweep(int ranks, const PipelineOptions& o) {
  if (!o.train.empty()) return {given_configuration(ranks, o)};
  // The large size takes ~0.4 s a step on one core: the full sweep has it, --quick not.
  std::vector<std::string> sizes = o.model_sizes;
  if (sizes.empty()) sizes = o.quick ? std::vector<std::string>{"small", "medium"} : model_sizes();
  auto sweep = default_sweep(ranks, sizes);
  if (!o.configs.empty()) {
    std::erase_if(sweep, [&](const SweepEntry& e) {
      return std::find(o.configs.begin(), o.configs.end(), e.name) == o.configs.end();
    });
    std::string asked;
    for (const auto& c : o.configs) asked += (asked.empty() ? "" : ",") + c;
    if (sweep.empty()) throw UsageError("--configs '" + asked + "': no configuration of the sweep matches");
  }
  if (!o.dense.empty())
    for (auto& e : sweep) e.config.dense = model::parse_dense_path(o.dense);
  if (!o.recompute.empty()) {  // named for it: "tp2_recompute_full.small"
    for (auto& e : sweep) {
      model::set_train_config_key(e.config, "recompute", o.recompute);
      if (e.config.recompute != model::Recompute::none)
        e.name.insert(e.name.rfind('.'), std::string("_recompute_") + model::to_string(e.config.recompute));
    }
  }
  return sweep;
}

// The kernels of every plan at their shapes, each measured three times: on the same
// operands again (hot), after streaming 4 x the rank's private caches through (warm:
// the operands in the last level only; left out where that is no less than the last
// level) and after streaming 4 x the last-level cache through (cold; 32 MiB where a VM
// reports a host's huge L3); the step predictor costs each call between them by the
// cache state of the step (models/cache_state.hpp). Each run follows the op its plan
// runs before it (the state of the core, not only of the caches: a kernel after a
// vendor GEMM can run at a lower clock). Each case in its op's dtype (the step's, or its
// own: a mixed-precision master update), and peak_fma for the ceilings in each of them.
void add_plan_kernels(const Runtime& rt, const std::vector<SweepEntry>& sweep, compute::MeasureOptions& kernels) {
  const long long llc = rt.machine().last_level_cache_bytes();
  kernels.flush_bytes = 4 * std::max<long long>(llc > (64LL << 20) ? 8LL << 20 : llc, 1LL << 20);
  const long long warm_flush = 4 * rt.machine().private_cache_bytes() * rt.threads_per_rank();
  const bool warm = warm_flush > 0 && 2 * warm_flush <= kernels.flush_bytes;
  if (!kernels.kernels.empty()) return;  // the user chose the kernels
  std::set<std::string> names{"peak_fma"};
  std::set<std::tuple<std::string, std::string, std::string>> cases;
  std::set<std::string> dtypes;  // the cases': peak_fma, which has none, is measured in each
  for (const auto& e : sweep) {
    const auto plan = model::plan_step(e.config);
    for (const auto& st : plan.stages) {
      std::string before;  // the stage's previous kernel: its step runs forward, backward, optimizer
      for (const auto* phase : {&st.forward, &st.backward, &st.optimizer})
        for (const auto& op : phase->compute)
          if (std::string k = model::registry_kernel(op.kernel, op.shape); compute::is_kernel(k)) {
            // In the op's own dtype where it has one (a mixed-precision master update).
            const std::string& dtype = op.dtype.empty() ? e.config.dtype : op.dtype;
            if (cases.insert({k, op.shape, dtype}).second) {
              names.insert(k);
              dtypes.insert(dtype);
              kernels.cases.push_back({k, op.shape, 0, before, dtype});
              kernels.cases.push_back({k, op.shape, kernels.flush_bytes, before, dtype});
              if (warm) kernels.cases.push_back({k, op.shape, warm_flush, before, dtype});
            }
            before = k + ' ' + op.shape;
          }
    }
  }
  kernels.kernels.assign(names.begin(), names.end());
  if (!dtypes.empty()) kernels.dtypes.assign(dtypes.begin(), dtypes.end());
}

// The message sizes the plans send, per comm benchmark (in its size unit): measured
// besides the sweep's sizes, so that each collective of a step is costed from its own
// size. Between sweep points a factor 4 apart a transport's cost is far from the line
// through them (TCP across hosts: 256 KiB and 1 MiB allreduces at 5.1 and 15.7 ms, a
// 480 KiB one 7.9 ms), and the sweep tests how the step is composed, not that
// interpolation (tools/bench/heldout_mape.sh and cli.holdout test it).
// Sent in another element type (the compressed gradient sync's bfloat16 allreduces) a
// collective is measured in it apart (compressed_sync_options).
void add_plan_sizes(const std::vector<SweepEntry>& sweep, comm::Options& comm) {
  for (const auto& e : sweep) {
    const auto plan = model::plan_step(e.config);
    auto add = [&](const model::CommOp& op) {
      if (op.name.empty() || op.bytes < 1 || !op.dtype.empty()) return;
      comm.extra_sizes[op.collective].push_back(std::uint64_t(op.bytes));
      if (op.collective == "pingpong")  // a stage's messages: what receiving them costs too
        comm.extra_sizes["late_receive"].push_back(std::uint64_t(op.bytes));
    };
    for (const auto& st : plan.stages) {
      for (const auto* phase : {&st.forward, &st.backward, &st.optimizer})
        for (const auto& op : phase->comm) add(op);
      for (const auto& op : st.dp_sync) add(op);
      add(st.send_activation);
      add(st.send_gradient);
    }
  }
}

// The compressed gradient syncs' allreduces, in bfloat16 at their sizes and the sweep's
// (the user-defined sum runs at its own speed), back to back and isolated as the others;
// nothing (no benchmark) when no configuration compresses.
comm::Options compressed_sync_options(const std::vector<SweepEntry>& sweep, comm::Options comm) {
  comm.benchmarks.clear();
  comm.extra_sizes.clear();
  comm.dtypes = {comm::Dtype::bfloat16};
  comm.reduction = comm::Reduction::sum;
  for (const auto& e : sweep)
    for (const auto& st : model::plan_step(e.config).stages)
      for (const auto& op : st.optimizer.comm)
        if (op.dtype == "bfloat16" && op.bytes >= 1) comm.extra_sizes[op.collective].push_back(std::uint64_t(op.bytes));
  for (const auto& [name, sizes] : comm.extra_sizes) comm.benchmarks.push_back(name);
  return comm;
}

// The sizes of the messages between pipeline stages (none without a pipeline).
std::vector<std::uint64_t> pipeline_message_sizes(const std::vector<SweepEntry>& sweep) {
  std::vector<std::uint64_t> out;
  for (const auto& e : sweep)
    for (const auto& st : model::plan_step(e.config).stages)
      for (const auto* op : {&st.send_activation, &st.send_gradient})
        if (!op->name.empty() && op->bytes >= 1) out.push_back(std::uint64_t(op->bytes));
  return out;
}

// A step issues most of its collectives right after compute, so they meet the transport
// idle, and DP's buckets one right behind another; OSU's back-to-back timing is the
// second form only. Across TCP hosts the two differ (a 2-rank 256 KiB allreduce at
// 200 us one-way: 6.5 ms back to back, 4.7 ms after idle; 16 KiB allgathers 0.19 and
// 0.08 ms), so the plans' collectives are measured again, each call after an idle gap
// as long as itself: the `~isolated` form (models/collectives.hpp), which the step
// predictor costs a collective issued after compute by.
// - The ranks of a step enter such a collective together (the same compute after the
//   same collective), so its start is synchronised by window, not by a barrier, whose
//   release reaches the ranks one message apart: a 2-rank allgather of 8 KiB at 200 us
//   one-way took 0.41-0.52 ms after a barrier, 0.25-0.27 ms in a window and 0.28 ms in
//   the step (an allreduce, two exchanges, ~0.53 ms either way).
// - At the plans' sizes and the sweep's between them and two steps beyond each end: the
//   fit's segments bend where the transport changes protocol (there, allgathers of 16 and
//   32 KiB took 0.27 and 1.4 ms), and a line through three plan sizes alone missed the
//   middle one by 40%. A segment needs two sizes: with one step beyond the smallest plan
//   size only, a switch between the two left that step alone on its side, merged into the
//   plan size's segment (an all-to-all of 16 KiB took 0.35 ms there, of 20 KiB 1.5 ms,
//   and the fit put 20 KiB at 0.52 ms).
comm::Outcome measure_isolated_collectives(Runtime& rt, const comm::Options& back_to_back, ResultsFile* results,
                                           JsonResults* json) {
  comm::Options o = back_to_back;
  o.gap = comm::gap_as_long_as_the_operation;
  o.sync = comm::SyncMode::window;
  o.extra_sizes_only = true;
  o.benchmarks.clear();
  for (const auto& name : back_to_back.benchmarks) {
    const comm::Benchmark* b = comm::find_benchmark(name);
    auto plan = o.extra_sizes.find(name);
    if (!b || b->family != comm::Family::collective || plan == o.extra_sizes.end() || plan->second.empty()) continue;
    o.benchmarks.push_back(name);
    const auto [lo, hi] = std::minmax_element(plan->second.begin(), plan->second.end());
    const double steps = o.factor * o.factor;
    const ByteRange around{std::max<std::uint64_t>(1, std::uint64_t(*lo / steps)), std::uint64_t(*hi * steps)};
    for (auto bytes : geometric_sizes(o.sizes, o.factor))
      if (bytes >= around.min && bytes <= around.max) plan->second.push_back(bytes);
  }
  if (o.benchmarks.empty()) return {};
  return comm::run_comm_suite(rt, o, results, json);
}

// Was the network as fast at the end as when its collectives were measured? (The
// operator drift asks it of the kernels: a co-tenant slows the namespace network's
// delay lines too, and a run whose collectives were measured in one state and its steps
// in another tests nothing.) The plans' collectives measured again, isolated, against
// the model's time for each: their time-weighted ratio.
void check_comm_drift(Runtime& rt, const comm::Options& comm, const std::string& model_path, ResultsFile* results,
                      JsonResults* json) {
  const auto again = measure_isolated_collectives(rt, comm, nullptr, nullptr);
  if (!rt.is_root()) return;
  const auto file = model::read_model_file(model_path);
  const auto& model = model::comm_part(file, model_path);
  double before = 0, after = 0;
  std::size_t compared = 0;
  for (const auto& t : again.timed) {
    const model::CommFit* f = model.find(t.benchmark, t.level, t.dtype, t.ranks);
    if (!f || f->ranks != t.ranks || !(t.seconds > 0)) continue;
    const double modelled = model.predict(t.benchmark, t.bytes, t.ranks, t.level, t.dtype).seconds;
    if (!(modelled > 0)) continue;
    before += modelled;
    after += t.seconds;
    ++compared;
  }
  if (compared == 0) return;
  std::printf("comm drift: %zu collective sizes measured again after the sweep take %.2fx their time in the model "
              "(time-weighted)\n",
              compared, after / before);
  std::fflush(stdout);
  if (results) {
    h5::Group g = results->group("train");
    g.set_attr("comm_drift", after / before);
    g.set_attr("comm_drift_cases", static_cast<std::int64_t>(compared));
    results->flush();
  }
  if (json) json->set("comm_drift", {{"time_weighted", after / before}, {"cases", compared}});
}

}  // namespace

comm::Outcome run_train_pipeline(Runtime& rt, const PipelineOptions& o, comm::Options comm,
                                 compute::SuiteOptions compute, const std::string& results_path,
                                 std::unique_ptr<ResultsFile>& results, JsonResults* json) {
  const auto sweep = chosen_sweep(rt.size(), o);
  if (comm.benchmarks.empty()) {
    comm.benchmarks = {"pingpong", "late_receive", "bandwidth", "allreduce", "reduce_scatter", "allgather", "reduce_local"};
    // The experts' all-to-alls, where a configuration spreads its experts over ranks.
    if (std::any_of(sweep.begin(), sweep.end(), [](const SweepEntry& e) { return e.config.ep > 1; }))
      comm.benchmarks.push_back("alltoall");
  }
  if (!o.comm_sizes_given) comm.sizes = {4, 4 << 20};
  comm.dtypes = {comm::Dtype::float32};
  // The proxy reduces its activations and gradients in place (MPI_IN_PLACE): time that
  // form (on shared memory a 64 KiB in-place allreduce takes ~1.5x the out-of-place one).
  comm.time_in_place = true;
  // And it starts every collective non-blocking and waits for it (to overlap what it
  // can): time that form. Across the namespace network MPICH's blocking in-place
  // allgather and reduce_scatter of 1.5 MB took 29 ms, the non-blocking ones 20 ms, as
  // inside the step: FSDP's gathers costed at the blocking time over-predicted
  // fsdp2.large by 42%.
  comm.time_nonblocking = true;
  if (!o.comm_sizes_given) add_plan_sizes(sweep, comm);
  compute.kernels.dtypes = {"float32"};  // the proxy's, and the plans' own (add_plan_kernels)
  add_plan_kernels(rt, sweep, compute.kernels);
  compute.sweep.dtype = "float32";
  // Where a run's time goes (a CI limit on the whole run is sized from these).
  double mark = MPI_Wtime();
  const auto took = [&](const char* what) {
    const double now = MPI_Wtime();
    if (rt.is_root()) std::fprintf(stderr, "sextant: train suite: %s took %.1f s\n", what, now - mark);
    mark = now;
  };
  comm::Outcome outcome = comm::run_comm_suite(rt, comm, results.get(), json);
  if (!o.comm_sizes_given) {
    const auto add = [&](const comm::Outcome& more) {
      outcome.wrong += more.wrong;
      outcome.unmeasured += more.unmeasured;
    };
    add(measure_isolated_collectives(rt, comm, results.get(), json));
    if (const auto compressed = compressed_sync_options(sweep, comm); !compressed.benchmarks.empty()) {
      add(comm::run_comm_suite(rt, compressed, results.get(), json));
      add(measure_isolated_collectives(rt, compressed, results.get(), json));
    }
  }
  took("the collectives");
  outcome.wrong += compute::run_compute_suite(rt, compute, results.get(), json);
  if (rt.size() > 1) {
    measure_sync_skew(rt, results.get(), o.quick);
    measure_message_overhead(rt, results.get(), pipeline_message_sizes(sweep), o.quick);
  }
  took("the kernels and the partners' wait");

  const std::string model_path = results_path.substr(0, results_path.rfind(".h5")) + ".model.h5";
  if (rt.is_root()) {
    results.reset();  // closed, so the fit reads a complete file
    // One rank (the single-rank baseline) communicates nothing: no comm part to fit.
    model::ModelParts parts;
    parts.comm = rt.size() > 1;
    const auto model = model::fit_model_file(results_path, parts);
    model::write_model_file(model_path, local_provenance(rt.argc(), rt.argv()), model);
    std::cerr << "sextant: fitted " << model_path << "\n";
    for (const auto& r : model.compute->raised)
      std::cerr << "sextant: WARNING: a kernel beat a measured ceiling, raised to its rate (flagged in the model): " << r
                << "\n";
    results = std::make_unique<ResultsFile>(results_path);
  }
  barrier(MPI_COMM_WORLD, rt.oversubscribed() ? WaitMode::yield : WaitMode::blocking);
  SweepOptions so;
  so.model_path = model_path;
  so.kernels = compute.kernels;
  if (o.quick) so.steps = 8;
  if (o.steps > 0) {  // exactly the steps asked for
    so.steps = o.steps;
    so.min_seconds = 0;
    so.precision = 0;
    so.attempts = 1;  // the machine's speed is still measured and recorded
  }
  took("the fit");
  run_train_sweep(rt, sweep, so, results.get(), json);
  took("the configurations");
  // Was the machine as fast at the end as when its operators were measured? (Timings
  // of an oversubscribed run mean nothing either way.)
  if (!rt.oversubscribed()) {
    check_operator_drift(rt, compute.kernels, model_path, results.get(), json);
    if (rt.size() > 1 && !o.comm_sizes_given) check_comm_drift(rt, comm, model_path, results.get(), json);
    took("the drift checks");
  }
  return outcome;
}

}  // namespace sextant::train
