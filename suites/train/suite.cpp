#include "suites/train/suite.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "models/cache_state.hpp"
#include "models/json.hpp"
#include "models/model_file.hpp"
#include "models/step_predictor.hpp"
#include "suites/common/json_results.hpp"
#include "suites/common/mpi.hpp"
#include "suites/common/results.hpp"
#include "suites/common/runtime.hpp"
#include "suites/train/sync_skew.hpp"

namespace sextant::train {
namespace {

// The proxy's model sizes. small and medium are communication- and overhead-heavy on
// CPUs; large is compute-dominated (~95% of a 2-rank step in GEMMs and attention, ~0.4 s
// per step on one CPU core: larger would not fit a CI run on two cores).
model::TrainConfig model_size(const std::string& size) {
  model::TrainConfig c;
  if (size == "small") {
    c.layers = 2, c.hidden = 64, c.heads = 4, c.seq = 32, c.vocab = 256;
  } else if (size == "medium") {
    c.layers = 4, c.hidden = 128, c.heads = 4, c.seq = 64, c.vocab = 512;
  } else if (size == "large") {
    c.layers = 4, c.hidden = 256, c.heads = 8, c.seq = 128, c.vocab = 1024;
  } else {
    throw UsageError("model size '" + size + "': use small, medium or large");
  }
  c.micro_batch = 2;
  c.dtype = "float32";
  return c;
}

using KernelProfile = std::map<std::string, std::pair<double, long>>;  // TrainResult::kernels

// World rank `from`'s kernel profile, at the root (an empty one elsewhere).
KernelProfile profile_at_root(const Runtime& rt, const KernelProfile& mine, int from) {
  if (from == 0) return rt.is_root() ? mine : KernelProfile{};
  std::string text;  // "kernel shape\tseconds\tcalls\n" per entry
  if (rt.rank() == from)
    for (const auto& [key, v] : mine) {
      char numbers[64];
      std::snprintf(numbers, sizeof numbers, "\t%.17g\t%ld\n", v.first, v.second);
      text += key + numbers;
    }
  int length = static_cast<int>(text.size());
  if (rt.rank() == from) SEXTANT_MPI_CHECK(MPI_Send(&length, 1, MPI_INT, 0, 0, MPI_COMM_WORLD));
  if (rt.is_root()) SEXTANT_MPI_CHECK(MPI_Recv(&length, 1, MPI_INT, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  text.resize(length);
  if (rt.rank() == from) SEXTANT_MPI_CHECK(MPI_Send(text.data(), length, MPI_CHAR, 0, 1, MPI_COMM_WORLD));
  if (rt.is_root()) SEXTANT_MPI_CHECK(MPI_Recv(text.data(), length, MPI_CHAR, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  KernelProfile out;
  if (!rt.is_root()) return out;
  for (std::size_t at = 0; at < text.size();) {
    const auto tab1 = text.find('\t', at), tab2 = text.find('\t', tab1 + 1), end = text.find('\n', tab2 + 1);
    out[text.substr(at, tab1 - at)] = {std::stod(text.substr(tab1 + 1, tab2 - tab1 - 1)),
                                       std::stol(text.substr(tab2 + 1, end - tab2 - 1))};
    at = end + 1;
  }
  return out;
}

// A rank's kernels by total time: mean seconds per call inside the step; the compute
// suite's measurements of the same kernel and shape, hot (back to back), warm (after
// the private caches were flushed) and cold (after the last level was), from the model
// file; what the step predictor costs a call at in the step (between them by the cache
// state, the mean over its stage's calls of that shape), and the ratio of the step's
// time to it; then the same over every kernel the model has measured, and the time of
// those it has not (costed by their roofline bound).
void print_kernel_profile(const KernelProfile& kernels, int rank, int stage, const model::ComputeModel& compute,
                          const model::TrainConfig& config) {
  const auto plan = model::plan_step(config);
  const auto retention = compute.cache_retention();
  const auto misses = retention && compute.has_cache_bounds()
                          ? model::operand_misses(plan, stage, *retention, nullptr, model::hot_seconds(compute, config.dtype))
                          : std::map<std::string, model::OperandMisses>{};
  std::vector<std::pair<std::string, std::pair<double, long>>> ks(kernels.begin(), kernels.end());
  std::sort(ks.begin(), ks.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  const std::string title = "kernel shape (rank " + std::to_string(rank) + ", stage " + std::to_string(stage) + ", by total time)";
  std::printf("  %-58s %6s %11s %9s %9s %9s %11s %7s\n", title.c_str(), "calls",
              "in step(us)", "hot(us)", "warm(us)", "cold(us)", "predicted", "ratio");
  double total[5] = {0, 0, 0, 0, 0};  // in the step, hot, warm, cold, predicted
  double roofline_only[2] = {0, 0};    // kernels the model costs by their roofline bound: in the step, predicted
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const auto& [key, v] = ks[i];
    const double mean = v.first / static_cast<double>(v.second);
    const auto space = key.find(' ');
    const std::string kernel = key.substr(0, space), shape = key.substr(space + 1);
    double predicted = 0;
    int calls = 0;
    std::string dtype = config.dtype;  // or the op's own (a mixed-precision step's master update)
    const auto& st = plan.stages[stage];
    for (const auto* phase : {&st.forward, &st.backward, &st.optimizer})
      for (const auto& op : phase->compute) {
        if (op.kernel + " " + op.shape != key) continue;
        predicted += model::op_cost_in_step(compute, config.dtype, op, misses);
        ++calls;
        if (!op.dtype.empty()) dtype = op.dtype;
      }
    const auto bounds = compute.cache_bounds(kernel, dtype, shape);
    const auto e = compute.predict(kernel, dtype, 0, 0, "", shape);
    const bool costed = e.model == "measured" && calls > 0;
    predicted /= std::max(calls, 1);
    const double hot = bounds ? bounds->hot : e.seconds;
    const double warm = bounds && bounds->warm ? *bounds->warm : std::nan("");
    if (costed) {
      const double n = static_cast<double>(v.second);
      total[0] += v.first, total[1] += n * hot, total[2] += n * (std::isnan(warm) ? hot : warm);
      total[3] += n * e.seconds, total[4] += n * predicted;
    } else {
      roofline_only[0] += v.first;
      roofline_only[1] += static_cast<double>(v.second) * predicted;
    }
    if (i >= 10) continue;
    if (!costed) {  // no measurement of its own: its roofline bound
      std::printf("  %-58s %6ld %11.2f %9s %9s %9s %11.2f %7.2f\n", key.substr(0, 58).c_str(), v.second, mean * 1e6, "-",
                  "-", "-", predicted * 1e6, mean / predicted);
      continue;
    }
    std::printf("  %-58s %6ld %11.2f %9.2f %9.2f %9.2f %11.2f %7.2f\n", key.substr(0, 58).c_str(), v.second, mean * 1e6,
                hot * 1e6, warm * 1e6, e.seconds * 1e6, predicted * 1e6, mean / predicted);
  }
  if (total[4] > 0)
    std::printf("  %-58s %6s %11.0f %9.0f %9.0f %9.0f %11.0f %7.2f\n", "all kernels the model costs (us, all steps)", "",
                total[0] * 1e6, total[1] * 1e6, total[2] * 1e6, total[3] * 1e6, total[4] * 1e6, total[0] / total[4]);
  if (roofline_only[0] > 0)
    std::printf("  %-58s %6s %11.0f %9s %9s %9s %11.0f %7.2f\n", "kernels costed by their roofline bound (us, all steps)", "",
                roofline_only[0] * 1e6, "", "", "", roofline_only[1] * 1e6, roofline_only[0] / roofline_only[1]);
}

// Kernel times by case: one rank's median seconds per (kernel, dtype, shape, flush bytes).
using CaseTimes = std::map<std::tuple<std::string, std::string, std::string, double>, double>;

// The cases measured at once on every rank: each rank's medians, gathered on rank 0.
struct MeasuredCases {
  std::vector<CaseTimes::key_type> keys;     // in the order measured (on rank 0)
  std::vector<std::vector<double>> by_rank;  // [rank][case] medians, <= 0: none (on rank 0); rank 0's
                                             // alone where the ranks' cases differ

  CaseTimes times(int rank) const {
    CaseTimes out;
    if (by_rank.empty()) return out;  // not rank 0
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (by_rank.at(rank)[i] > 0) out[keys[i]] = by_rank[rank][i];
    return out;
  }
  // Whether every rank measured case i.
  bool everywhere(std::size_t i) const {
    return std::all_of(by_rank.begin(), by_rank.end(), [&](const auto& r) { return r[i] > 0; });
  }
  // Each rank's sum over the cases `use` names; empty where the ranks cannot be compared.
  std::vector<double> rank_seconds(const std::vector<bool>& use) const {
    if (by_rank.size() < 2) return {};
    std::vector<double> out(by_rank.size(), 0.0);
    for (std::size_t i = 0; i < keys.size(); ++i)
      for (std::size_t r = 0; use[i] && r < by_rank.size(); ++r) out[r] += by_rank[r][i];
    return out;
  }
};

// The cases measured now, every rank at once and flushed cases in lockstep, as the
// compute suite measured them (time only: they were validated before).
MeasuredCases measure_cases(Runtime& rt, compute::MeasureOptions cases) {
  cases.validate = false;
  cases.progress = nullptr;
  std::set<std::string> operators;  // the cases' kernels only (not the ceilings' ones, which no step runs)
  for (const auto& c : cases.cases) operators.insert(c.kernel);
  cases.kernels.assign(operators.begin(), operators.end());
  const WaitMode wait = rt.oversubscribed() ? WaitMode::yield : WaitMode::blocking;
  cases.synchronize = [wait] { barrier(MPI_COMM_WORLD, wait); };
  cases.agree_more = [wait](bool more) { return any_rank(more, MPI_COMM_WORLD, wait); };
  barrier(MPI_COMM_WORLD, wait);
  const auto measured = compute::measure_kernels(cases);
  barrier(MPI_COMM_WORLD, wait);
  std::vector<double> mine;
  for (const auto& m : measured) mine.push_back(m.summary.median);
  const int count[2] = {int(mine.size()), -int(mine.size())};
  int most[2];
  allreduce(count, most, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD, wait);
  const bool comparable = most[0] == -most[1] && rt.size() > 1;  // every rank the same count
  std::vector<double> all(comparable && rt.is_root() ? mine.size() * rt.size() : 0);
  if (comparable) gather(mine.data(), int(mine.size()), MPI_DOUBLE, all.data(), 0, MPI_COMM_WORLD, wait);
  MeasuredCases out;
  if (!rt.is_root()) return out;
  for (const auto& m : measured) out.keys.push_back({m.name, m.dtype, m.shape, double(m.flush_bytes)});
  if (!comparable) out.by_rank = {mine};
  const std::size_t n = mine.size();
  for (int r = 0; comparable && r < rt.size(); ++r)
    out.by_rank.emplace_back(all.begin() + r * n, all.begin() + (r + 1) * n);
  return out;
}

// The kernel times a configuration is predicted from: of each rank, its measurement
// just before or just after the steps, whichever took less in all (a co-tenant on one
// vCPU's core for a second or two slowed one rank's cases to 1.36x the other's before
// tp_sp2.small, predicted then 35% long; the steps' median had left it behind), and of
// the ranks the slowest (its step's collectives make every rank wait for it: a 2-vCPU
// guest ran the same kernels at up to 1.4x on one rank for whole configurations).
struct KernelTimes {
  CaseTimes times;
  int rank = 0;                       // whose times they are
  std::vector<double> before, after;  // each rank's sum (MeasuredCases::rank_seconds); empty: not compared
};
KernelTimes slowest_rank(const MeasuredCases& before, const MeasuredCases& after) {
  KernelTimes out;
  // The sums compared are over the same cases: those every rank measured, both times.
  const bool both = after.keys == before.keys && after.by_rank.size() == before.by_rank.size();
  std::vector<bool> use(before.keys.size());
  for (std::size_t i = 0; i < use.size(); ++i) use[i] = before.everywhere(i) && (!both || after.everywhere(i));
  out.before = before.rank_seconds(use);
  if (both) out.after = after.rank_seconds(use);
  if (out.before.empty()) {  // one rank, or ranks whose cases differ: rank 0's before the steps
    out.times = before.times(0);
    return out;
  }
  double slowest = -1;
  const MeasuredCases* source = &before;
  for (std::size_t r = 0; r < out.before.size(); ++r) {
    const bool later = both && out.after[r] < out.before[r];
    const double rank_seconds = later ? out.after[r] : out.before[r];
    if (rank_seconds > slowest) {
      slowest = rank_seconds;
      out.rank = int(r);
      source = later ? &after : &before;
    }
  }
  out.times = source->times(out.rank);
  return out;
}

CaseTimes::key_type case_of(const model::KernelPoint& p) { return {p.kernel, p.dtype, p.shape, p.flush_bytes}; }

// The time of the cases measured now over their time in the model (time-weighted), and
// how many were compared; 0 where none was.
std::pair<double, std::size_t> against_model(const CaseTimes& now, const model::ComputeModel& model) {
  double then = 0, again = 0;
  std::size_t compared = 0;
  for (const auto& p : model.points)
    if (const auto at = now.find(case_of(p)); at != now.end() && p.seconds > 0) {
      then += p.seconds;
      again += at->second;
      ++compared;
    }
  return {compared > 0 ? again / then : 0.0, compared};
}

// The cases of the sweep's that a configuration's plan runs.
compute::MeasureOptions own_cases(compute::MeasureOptions all, const model::StepPlan& plan) {
  std::set<std::pair<std::string, std::string>> runs;
  for (const auto& st : plan.stages)
    for (const auto* phase : {&st.forward, &st.backward, &st.optimizer})
      for (const auto& op : phase->compute) runs.insert({model::registry_kernel(op.kernel, op.shape), op.shape});
  std::erase_if(all.cases, [&](const compute::KernelCase& c) { return !runs.count({c.kernel, c.shape}); });
  return all;
}

// The model with the points measured again at their new times.
model::ComputeModel remeasured(model::ComputeModel model, const CaseTimes& now) {
  for (auto& p : model.points)
    if (const auto at = now.find(case_of(p)); at != now.end()) p.seconds = at->second;
  return model;
}

// The share of measured steps in which some rank's kernels took more than 1.25x their
// time in that rank's typical fast step (its 10th percentile; the fastest single step
// is an outlier on small models, whose kernel time varies by 15-20% step to step):
// steps that a co-tenant slowed (on the rank's CPU, its cache or its memory). The same
// on every rank (every rank has every rank's phases).
double disturbed_steps(const TrainResult& r) {
  if (r.steps == 0) return 0;
  auto kernels = [&](int step, int rank) {
    const PhaseTimes& p = r.phases(step, rank);
    return p.forward + p.backward + p.optimizer;
  };
  std::vector<double> typical(r.ranks);
  for (int k = 0; k < r.ranks; ++k) {
    std::vector<double> times;
    for (int s = 0; s < r.steps; ++s) times.push_back(kernels(s, k));
    std::sort(times.begin(), times.end());
    typical[k] = stats::quantile_sorted(times, 0.10);
  }
  int slow = 0;
  for (int s = 0; s < r.steps; ++s)
    for (int k = 0; k < r.ranks; ++k)
      if (kernels(s, k) > 1.25 * typical[k]) {
        ++slow;
        break;
      }
  return double(slow) / r.steps;
}

// A model's single-rank baseline (SweepOptions::baseline).
struct Baseline {
  std::string name;  // "single.small.p2": the model size, the ranks of the run it serves
  double median = 0, ci_lo = 0, ci_hi = 0;
  std::vector<double> step_time, loss;
};

// The layout-independent part of a configuration: what its baseline trains.
model::TrainConfig single_rank(model::TrainConfig c) {
  c.dp = c.tp = c.pp = c.ep = 1;
  c.sp = false;
  c.zero = 0;
  c.overlap_dp = false;
  c.staleness = 0;  // the speedup of a stale layout includes what its delay saves
  c.compress = model::Compression::none;  // one rank sends no gradients
  c.schedule = model::TrainConfig{}.schedule;  // one stage: no pipeline to schedule
  c.recompute = model::Recompute::none;         // the speedup of a recomputing layout includes its cost
  c.master.clear();                             // and a mixed-precision one's, what its master copy costs
  return c;
}

// Rank 0 trains the configuration's model alone while the others wait (yielding where
// the run is oversubscribed); the result on rank 0.
std::optional<Baseline> measure_baseline(Runtime& rt, const SweepEntry& entry, const std::string& name,
                                         TrainRunOptions run) {
  MPI_Comm alone = MPI_COMM_NULL;
  SEXTANT_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, rt.is_root() ? 0 : MPI_UNDEFINED, 0, &alone));
  std::optional<Baseline> out;
  if (alone != MPI_COMM_NULL) {
    run.profile = false;
    run.wait = WaitMode::blocking;  // nothing to wait for on one rank
    TrainResult r = run_training(single_rank(entry.config), run, alone);
    SEXTANT_MPI_CHECK(MPI_Comm_free(&alone));
    const auto s = stats::summarize(r.step_time);
    out = Baseline{name, s.median, s.ci_lo, s.ci_hi, r.step_time, r.loss};
  }
  barrier(MPI_COMM_WORLD, rt.oversubscribed() ? WaitMode::yield : WaitMode::blocking);
  return out;
}

// Printed as a '#' line of the table, stored as /train_baseline/NAME (attributes as a
// configuration's: measured_median, measured_ci_lo/hi; step_time, loss) and as JSON
// "train_baseline" rows.
void record_baseline(const Baseline& b, ResultsFile* results, JsonResults* json) {
  std::printf("# %s (rank 0 alone: the same model, data and global batch): %.3f ms per step [%.3f, %.3f], loss "
              "%.3f -> %.3f\n",
              b.name.c_str(), b.median * 1e3, b.ci_lo * 1e3, b.ci_hi * 1e3, b.loss.front(), b.loss.back());
  std::fflush(stdout);
  if (json)
    json->append("train_baseline", {{"configuration", b.name}, {"measured_median_s", b.median},
                                    {"measured_ci_s", {b.ci_lo, b.ci_hi}}, {"step_times_s", b.step_time},
                                    {"loss", b.loss}});
  if (results) {
    h5::Group g = results->group("train_baseline/" + b.name);
    g.set_attr("measured_median", b.median);
    g.set_attr("measured_ci_lo", b.ci_lo);
    g.set_attr("measured_ci_hi", b.ci_hi);
    g.write("step_time", b.step_time);
    g.write("loss", b.loss);
    results->flush();
  }
}

}  // namespace

const std::vector<std::string>& model_sizes() {
  static const std::vector<std::string> sizes{"small", "medium", "large"};
  return sizes;
}

std::vector<SweepEntry> default_sweep(int ranks, const std::vector<std::string>& sizes) {
  for (const auto& size : sizes) model_size(size);  // an unknown size: a usage error before any work
  struct Strategy {
    const char* name;
    int dp, tp, pp;
    model::Schedule schedule;
    int zero = 0;
    bool sp = false;
    model::Compression compress = model::Compression::none;
    int experts = 0, top_k = 1, ep = 1;  // a mixture of experts: another model, with its own baseline
    const char* master = "";             // mixed precision: float32 steps, this type's master copy
  };
  std::vector<Strategy> strategies;
  using model::Schedule;
  if (ranks == 1) strategies = {{"single", 1, 1, 1, Schedule::one_f_one_b}};
  else
    strategies = {{"dp", ranks, 1, 1, Schedule::one_f_one_b},
                  {"tp", 1, ranks, 1, Schedule::one_f_one_b},
                  {"tp_sp", 1, ranks, 1, Schedule::one_f_one_b, 0, true},
                  {"pp_gpipe", 1, 1, ranks, Schedule::gpipe},
                  {"pp_1f1b", 1, 1, ranks, Schedule::one_f_one_b},
                  {"fsdp", ranks, 1, 1, Schedule::one_f_one_b, 3},
                  {"dp_bf16", ranks, 1, 1, Schedule::one_f_one_b, 0, false, model::Compression::bf16},
                  // Switch: an expert a rank, each token to one (the regrouped path of
                  // several a rank runs in the mpi.train tests; the sweep's steps at 2
                  // threads a rank on 2 CPUs, oversubscribed, pay for every kernel's
                  // OpenMP barrier, and several experts a rank double the kernels).
                  {"moe_ep", ranks, 1, 1, Schedule::one_f_one_b, 0, false, model::Compression::none, ranks, 1, ranks},
                  {"dp_mixed", ranks, 1, 1, Schedule::one_f_one_b, 0, false, model::Compression::none, 0, 1, 1, "float64"}};
  if (ranks == 4)
    strategies.push_back({"dp2_tp2_pp1", 2, 2, 1, Schedule::one_f_one_b}),
        strategies.push_back({"tp2_pp2", 1, 2, 2, Schedule::one_f_one_b});
  std::vector<SweepEntry> out;
  for (const auto& size : sizes)
    for (const auto& s : strategies) {
      SweepEntry e{std::string(s.name) + std::to_string(ranks) + "." + size, model_size(size)};
      if (size == "large") e.lr = 3e-3;
      e.config.dp = s.dp;
      e.config.tp = s.tp;
      e.config.pp = s.pp;
      e.config.schedule = s.schedule;
      e.config.zero = s.zero;
      e.config.sp = s.sp;
      e.config.compress = s.compress;
      e.config.experts = s.experts;
      e.config.top_k = s.top_k;
      e.config.ep = s.ep;
      e.config.master = s.master;
      e.config.dense = default_dense_path();
      // One global batch per model size, whatever the layout: every layout of a size
      // trains the same model on the same data, so their loss curves must agree (the
      // suite's own check that each layout computes what it claims). Two micro-batches
      // per rank: a pipeline of all the ranks has 2 x stages of them to overlap.
      e.config.global_batch = e.config.micro_batch * ranks * 2;
      if (e.config.pp > e.config.layers) continue;
      out.push_back(e);
    }
  return out;
}

std::vector<SweepRow> run_train_sweep(Runtime& rt, const std::vector<SweepEntry>& sweep, const SweepOptions& o,
                                      ResultsFile* results, JsonResults* json) {
  std::optional<model::CommModel> comm;
  std::optional<model::ComputeModel> compute;
  std::optional<model::SyncModel> sync;
  if (rt.is_root()) {
    auto file = model::read_model_file(o.model_path);
    compute = model::compute_part(file, o.model_path);
    comm = file.comm.value_or(model::CommModel{});  // none on one rank
    sync = file.sync;
    std::printf("# training proxy: predicted (from %s) vs measured, %d ranks, %d threads per rank%s\n",
                o.model_path.c_str(), rt.size(), rt.threads_per_rank(),
                rt.oversubscribed() ? " (OVERSUBSCRIBED: timings not meaningful)" : "");
    std::printf("%-22s %12s %23s %13s %9s %14s %9s %8s %16s\n", "configuration", "measured(ms)", "ci95(ms)",
                "predicted(ms)", "error", "op-models(ms)", "error", "speedup", "loss first->last");
    std::fflush(stdout);
  }
  std::vector<SweepRow> rows;
  TrainRunOptions run;
  run.steps = o.steps;
  run.warmup = o.warmup;
  run.min_seconds = o.min_seconds;
  run.max_steps = o.max_steps;
  // An oversubscribed run's timings mean nothing (its table and files say so): no steps
  // are spent making their medians precise (two threads per rank on two ranks of two
  // CPUs spent up to 10 s a configuration on it and passed mpi.train_quick's 280 s).
  run.precision = rt.oversubscribed() ? 0 : o.precision;
  run.max_seconds = o.max_seconds;
  run.wait = rt.oversubscribed() ? WaitMode::yield : WaitMode::blocking;
  // Diagnostic: each kernel's time inside the step against the compute model's estimate.
  run.profile = std::getenv("SEXTANT_TRAIN_PROFILE") != nullptr;
  double retry_spent = 0;  // SweepOptions::retry_seconds
  bool retry_budget_said = false;
  // Baselines by the model they train (its layout-independent configuration).
  std::map<std::string, std::optional<Baseline>> baselines;
  std::set<std::string> baseline_names;
  for (const auto& entry : sweep) {
    SweepRow row{entry.name};
    run.lr = entry.lr;  // its baseline's too
    std::optional<Baseline>* baseline = nullptr;
    if (o.baseline && rt.size() > 1) {
      const std::string model_key = nlohmann::json(single_rank(entry.config)).dump();
      auto [at, fresh] = baselines.try_emplace(model_key);
      baseline = &at->second;
      if (fresh) {
        // Named by the model size and the run's ranks, whose global batch it trains
        // ("single.small.p2"), and numbered where configurations of one size train
        // different models (another dtype, say).
        const std::string size =
            "single." + entry.name.substr(entry.name.rfind('.') + 1) + ".p" + std::to_string(rt.size());
        std::string name = size;
        for (int n = 2; baseline_names.count(name); ++n) name = size + "." + std::to_string(n);
        baseline_names.insert(name);
        *baseline = measure_baseline(rt, entry, name, run);
        if (*baseline) record_baseline(**baseline, results, json);
      }
    }
    const auto plan = model::plan_step(entry.config);
    const model::LevelMap levels{o.level, o.level, o.level, o.level};
    auto predict = [&](const model::ComputeModel& m, const std::optional<model::SyncModel>& waits) {
      return model::predict_step(plan, *comm, m, levels, waits ? &*waits : nullptr);
    };
    model::StepPrediction predicted;
    if (rt.is_root()) {
      predicted = predict(*compute, sync);
      // The same from the operator models alone, never from the measured shapes.
      model::ComputeModel models_only = *compute;
      models_only.use_points = false;
      row.predicted_models_only = predict(models_only, sync).total;
    }
    // The kernels just before the steps (SweepOptions::kernels), and the steps' own
    // disturbance; measured again while that is beyond its tolerance.
    const bool check_speed = o.check_speed && !rt.oversubscribed() && !o.kernels.cases.empty();
    const compute::MeasureOptions own = check_speed ? own_cases(o.kernels, plan) : compute::MeasureOptions{};
    // The partners' wait just before the steps too: a rank slowed while the suite
    // measured it (a co-tenant on its CPU for seconds) made every synchronisation of
    // every step wait for it, and dp2.large was predicted 30% long (a CPU-bound process
    // on one CPU during that measurement only, on a 2-vCPU host); ~0.5 s a configuration.
    const bool check_waits = check_speed && rt.size() > 1;
    TrainResult r;
    KernelTimes kernels;  // of the run kept
    PartnersWait waits;  // of the run kept
    std::optional<double> speed;
    double disturbed = 0;
    int attempts = 0;
    for (double best = 0; attempts < std::max(1, o.attempts);) {
      const double started = MPI_Wtime();
      MeasuredCases ahead = check_speed ? measure_cases(rt, own) : MeasuredCases{};
      PartnersWait waits_ahead = check_waits ? measure_partners_wait(rt, 0.05, 5) : PartnersWait{};
      TrainResult attempt = run_training(entry.config, run, MPI_COMM_WORLD);
      MeasuredCases behind = check_speed ? measure_cases(rt, own) : MeasuredCases{};
      if (attempts > 0) {  // a measurement again: its cost, alike on every rank
        double took = MPI_Wtime() - started;
        SEXTANT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &took, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        retry_spent += took;
      }
      const double slow_steps = check_speed ? disturbed_steps(attempt) : 0;
      // How far this run is from a clean one (<= 0: clean); the least disturbed is kept.
      const double badness = slow_steps - o.disturbed_tolerance;
      ++attempts;
      if (attempts == 1 || badness < best) {
        r = std::move(attempt);
        kernels = slowest_rank(ahead, behind);
        waits = std::move(waits_ahead);
        disturbed = slow_steps, best = badness;
      }
      if (best <= 0) break;
      if (retry_spent >= o.retry_seconds && attempts < o.attempts) {
        if (rt.is_root() && !retry_budget_said)
          std::printf("  (%s: disturbed, but the sweep has spent its %.0f s of measuring again: kept as measured, "
                      "and so are the rest)\n",
                      entry.name.c_str(), o.retry_seconds);
        retry_budget_said = true;
        break;
      }
      if (rt.is_root() && attempts < o.attempts)
        std::printf("  (%s: %.0f%% of the steps slowed: measured again)\n", entry.name.c_str(), 100 * slow_steps);
    }
    // The profile of rank 0 and, in a pipeline, of the last stage's first rank (the
    // head's kernels run there), which sends it to the root.
    KernelProfile last_stage_kernels;
    int last_stage_rank = 0;
    if (run.profile && entry.config.pp > 1) {
      for (int w = 0; w < static_cast<int>(r.coords.size()); ++w)
        if (r.coords[w].pp == entry.config.pp - 1 && r.coords[w].tp == 0 && r.coords[w].dp == 0) last_stage_rank = w;
      last_stage_kernels = profile_at_root(rt, r.kernels, last_stage_rank);
    }
    if (!rt.is_root()) continue;
    row.predicted_from_file = predicted.total;
    if (check_speed) {
      const double vs_model = against_model(kernels.times, *compute).first;
      if (vs_model > 0) speed = vs_model;
      std::optional<model::SyncModel> waits_now = sync;
      if (!waits.excess.empty()) {  // measured on this run's ranks
        if (!waits_now) waits_now.emplace();
        waits_now->ranks = rt.size();
        waits_now->interval_s = waits.interval_s;
        waits_now->excess = waits.excess;
      }
      predicted = predict(remeasured(*compute, kernels.times), waits_now);
    }
    row.predicted = predicted.total;
    auto s = stats::summarize(r.step_time);
    row.measured = s.median;
    row.ci_lo = s.ci_lo;
    row.ci_hi = s.ci_hi;
    row.error = (row.predicted - row.measured) / row.measured;
    row.error_from_file = (row.predicted_from_file - row.measured) / row.measured;
    row.error_models_only = (row.predicted_models_only - row.measured) / row.measured;
    row.loss_first = r.loss.front();
    row.loss_last = r.loss.back();
    if (rt.size() == 1) row.speedup = 1;  // the configuration is its own baseline
    else if (baseline && *baseline) row.speedup = (*baseline)->median / row.measured;
    char speedup[32] = "-";
    if (std::isfinite(row.speedup)) std::snprintf(speedup, sizeof speedup, "%.2fx", row.speedup);
    char ci[64];
    std::snprintf(ci, sizeof ci, "[%.3f, %.3f]", s.ci_lo * 1e3, s.ci_hi * 1e3);
    std::printf("%-22s %12.3f %23s %13.3f %8.1f%% %14.3f %8.1f%% %8s %7.3f -> %6.3f\n", entry.name.c_str(),
                row.measured * 1e3, ci, row.predicted * 1e3, 100 * row.error, row.predicted_models_only * 1e3,
                100 * row.error_models_only, speedup, row.loss_first, row.loss_last);
    std::fflush(stdout);
    if (json)
      json->append("train", {{"configuration", entry.name}, {"config", entry.config},
                             {"measured_median_s", row.measured}, {"measured_ci_s", {row.ci_lo, row.ci_hi}},
                             {"step_times_s", r.step_time}, {"loss", r.loss}, {"prediction", predicted},
                             {"error", row.error}, {"predicted_from_model_file_s", row.predicted_from_file},
                             {"error_from_model_file", row.error_from_file},
                             {"predicted_models_only_s", row.predicted_models_only},
                             {"error_models_only", row.error_models_only}, {"oversubscribed", rt.oversubscribed()},
                             {"kernels_vs_model", speed ? nlohmann::json(*speed) : nlohmann::json()},
                             {"attempts", attempts},
                             {"speedup", std::isfinite(row.speedup) ? nlohmann::json(row.speedup) : nlohmann::json()},
                             {"disturbed_steps", check_speed ? nlohmann::json(disturbed) : nlohmann::json()},
                             {"kernels_rank", check_speed ? nlohmann::json(kernels.rank) : nlohmann::json()},
                             {"kernels_before_by_rank_s",
                              kernels.before.empty() ? nlohmann::json() : nlohmann::json(kernels.before)},
                             {"kernels_after_by_rank_s",
                              kernels.after.empty() ? nlohmann::json() : nlohmann::json(kernels.after)},
                             {"partners_wait", waits.excess.empty() ? nlohmann::json()
                                                                    : nlohmann::json{{"interval_s", waits.interval_s},
                                                                                     {"excess", waits.excess}}}});
    if (results) {
      h5::Group g = results->group("train/" + entry.name);
      const auto& c = entry.config;
      g.set_attr("layers", c.layers);
      g.set_attr("hidden", c.hidden);
      g.set_attr("heads", c.heads);
      g.set_attr("seq", c.seq);
      g.set_attr("vocab", c.vocab);
      g.set_attr("micro_batch", c.micro_batch);
      g.set_attr("global_batch", c.global_batch);
      g.set_attr("dp", c.dp);
      g.set_attr("tp", c.tp);
      g.set_attr("pp", c.pp);
      g.set_attr("schedule", c.schedule == model::Schedule::gpipe ? "gpipe" : "1f1b");
      g.set_attr("dtype", c.dtype);
      g.set_attr("master", c.master_dtype());
      g.set_attr("recompute", model::to_string(c.recompute));
      g.set_attr("sp", std::int64_t{c.sp});
      g.set_attr("zero", std::int64_t{c.dp > 1 ? c.zero : 0});
      g.set_attr("staleness", std::int64_t{c.staleness});
      g.set_attr("compress", model::to_string(c.dp > 1 ? c.compress : model::Compression::none));
      g.set_attr("experts", std::int64_t{c.experts});
      g.set_attr("top_k", std::int64_t{c.top_k});
      g.set_attr("capacity", c.capacity);
      g.set_attr("ep", std::int64_t{c.ep});
      if (baseline && *baseline) g.set_attr("baseline", (*baseline)->name);  // its /train_baseline group
      g.set_attr("oversubscribed", std::int64_t{rt.oversubscribed()});
      g.set_attr("measured_median", row.measured);
      g.set_attr("measured_ci_lo", row.ci_lo);
      g.set_attr("measured_ci_hi", row.ci_hi);
      g.set_attr("predicted", row.predicted);
      g.set_attr("error", row.error);
      g.set_attr("predicted_from_model_file", row.predicted_from_file);
      g.set_attr("error_from_model_file", row.error_from_file);
      g.set_attr("predicted_models_only", row.predicted_models_only);
      g.set_attr("error_models_only", row.error_models_only);
      // Missing where not measured (oversubscribed, or no kernel case of the plan in the model).
      if (speed) g.set_attr("kernels_vs_model", *speed);
      if (check_speed) g.set_attr("kernels_rank", std::int64_t{kernels.rank});
      if (!kernels.before.empty()) g.write("kernels_before_by_rank_seconds", kernels.before);
      if (!kernels.after.empty()) g.write("kernels_after_by_rank_seconds", kernels.after);
      g.set_attr("attempts", static_cast<std::int64_t>(attempts));
      if (std::isfinite(row.speedup)) g.set_attr("speedup", row.speedup);  // missing where no baseline was measured
      if (check_speed) g.set_attr("disturbed_steps", disturbed);
      if (!waits.excess.empty()) {  // the partners' wait just before the steps, the prediction's
        g.write("partners_wait_interval_seconds", waits.interval_s);
        g.write("partners_wait_excess", waits.excess);
      }
      g.write("step_time", r.step_time);
      g.write("loss", r.loss);
      std::vector<std::string> names;
      std::vector<double> values;
      for (const auto& [name, t] : predicted.breakdown) {
        names.push_back(name);
        values.push_back(t);
      }
      g.write("predicted_breakdown_names", names);
      g.write("predicted_breakdown", values);
      // Measured phases, mean over steps, per rank.
      std::vector<double> phases;
      for (int rank = 0; rank < r.ranks; ++rank) {
        auto p = r.mean_phases(rank);
        phases.insert(phases.end(), {p.total, p.forward, p.backward, p.optimizer, p.tp_comm, p.pp_comm, p.dp_comm,
                                     p.ep_comm, p.pipeline_idle, p.other()});
      }
      g.write("measured_phases", phases, {static_cast<hsize_t>(r.ranks), 10});
      g.set_attr("measured_phases_columns",
                 "total,forward,backward,optimizer,tp_comm,pp_comm,dp_comm,ep_comm,pipeline_idle,other");
      results->flush();
    }
    if (run.profile) {
      print_kernel_profile(r.kernels, 0, 0, *compute, entry.config);
      if (last_stage_rank > 0) print_kernel_profile(last_stage_kernels, last_stage_rank, entry.config.pp - 1, *compute, entry.config);
    }
    rows.push_back(row);
  }
  if (rt.is_root()) {
    auto models_only = rows;
    for (auto& r : models_only) r.error = r.error_models_only;
    std::printf("operator models only: %s\n", summary_line(models_only).c_str());
    auto from_file = rows;
    for (auto& r : from_file) r.error = r.error_from_file;
    std::printf("every kernel as measured before the sweep (the model file as fitted): %s\n",
                summary_line(from_file).c_str());
    std::printf("%s\n", summary_line(rows).c_str());
    std::fflush(stdout);
  }
  return rows;
}

std::optional<double> check_operator_drift(Runtime& rt, compute::MeasureOptions cases, const std::string& model_path,
                                           ResultsFile* results, JsonResults* json) {
  const MeasuredCases measured = measure_cases(rt, std::move(cases));
  const CaseTimes again = rt.is_root() ? measured.times(0) : CaseTimes{};  // rank 0's, as the model's
  double out[2] = {0, 0};  // time-weighted ratio, median ratio; 0: none compared
  std::size_t compared = 0;
  if (rt.is_root()) {
    const auto file = model::read_model_file(model_path);
    const auto& model = model::compute_part(file, model_path);
    std::vector<double> ratios;  // each against the model's measurement of the same case and cache state
    for (const auto& p : model.points)
      if (const auto at = again.find(case_of(p)); at != again.end() && p.seconds > 0) ratios.push_back(at->second / p.seconds);
    std::tie(out[0], compared) = against_model(again, model);
    if (compared > 0) {
      out[1] = stats::median(ratios);
      std::printf("operator drift: %zu kernel cases measured again after the sweep take %.2fx their time in the "
                  "model (time-weighted; median case %.2fx)\n",
                  compared, out[0], out[1]);
      std::fflush(stdout);
      if (results) {
        h5::Group g = results->group("train");
        g.set_attr("operator_drift", out[0]);
        g.set_attr("operator_drift_median", out[1]);
        g.set_attr("operator_drift_cases", static_cast<std::int64_t>(compared));
        results->flush();
      }
      if (json) json->set("operator_drift", {{"time_weighted", out[0]}, {"median", out[1]}, {"cases", compared}});
    }
  }
  SEXTANT_MPI_CHECK(MPI_Bcast(out, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD));
  if (!(out[0] > 0)) return std::nullopt;
  return out[0];
}

std::string summary_line(const std::vector<SweepRow>& rows) {
  std::vector<double> errs;
  for (const auto& r : rows) errs.push_back(std::fabs(r.error) * 100);
  if (errs.empty()) return "median |error| -  max |error| -";
  auto s = stats::summarize(errs);
  char buf[96];
  std::snprintf(buf, sizeof buf, "median |error| %.1f%%  max |error| %.1f%%", s.median, s.max);
  return buf;
}

}  // namespace sextant::train
