// The options of `sextant run`, per suite (run_options.hpp).
#include "tools/sextant/run_options.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/units.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {
namespace {

// --ranks A:B (every count from A to B) or A,B,C: at least 2 each, ascending, distinct.
std::vector<int> parse_rank_counts(const std::string& text) {
  auto bad = [&](const std::string& why) { return UsageError("--ranks '" + text + "': " + why); };
  auto number = [&](const std::string& item) {
    if (auto v = parse_int(item)) return *v;
    throw bad("'" + item + "' is not a rank count");
  };
  std::vector<int> counts;
  if (auto colon = text.find(':'); colon != std::string::npos) {
    int lo = number(text.substr(0, colon)), hi = number(text.substr(colon + 1));
    if (hi < lo) throw bad("the range ends below its start");
    for (int p = lo; p <= hi; ++p) counts.push_back(p);
  } else {
    for (const auto& item : split_list(text)) counts.push_back(number(item));
  }
  if (counts.empty()) throw bad("no rank count");
  if (counts.front() < 2) throw bad("a collective needs at least 2 ranks");
  if (!std::is_sorted(counts.begin(), counts.end()) || std::adjacent_find(counts.begin(), counts.end()) != counts.end())
    throw bad("rank counts must ascend, each once");
  return counts;
}

}  // namespace

comm::Options CommArgs::resolve(const MeasureArgs& m, bool dtypes_apply) const {
  const CommArgs& a = *this;
  comm::Options o;
  if (m.quick) comm::make_quick(o);
  if (!a.sizes.empty()) {
    try {
      o.sizes = parse_byte_range(a.sizes, o.sizes);
    } catch (const UsageError& e) {
      throw UsageError(std::string("-m/--sizes: ") + e.what());
    }
  }
  if (a.factor != 0) o.factor = a.factor;
  if (m.iterations != 0) {
    o.max_iterations = static_cast<std::size_t>(m.iterations);
    o.min_iterations = std::min(o.min_iterations, o.max_iterations);
  }
  if (a.warmup >= 0) o.warmup = static_cast<std::size_t>(a.warmup);
  if (a.sweep_warmup >= 0) o.sweep_warmup_seconds = a.sweep_warmup;
  o.passes = static_cast<int>(a.passes);
  if (m.budget != 0) o.budget_seconds = m.budget;
  if (m.precision != 0) o.rel_ci_half_width = m.precision;
  o.sync = comm::parse_sync(a.sync);
  if (a.gap == "op") {
    o.gap = comm::gap_as_long_as_the_operation;
  } else if (!a.gap.empty()) {
    const auto seconds = parse_number(a.gap);
    if (!seconds || *seconds < 0 || *seconds > 10)
      throw UsageError("--gap '" + a.gap + "': give seconds in [0, 10] (e.g. 0.0005) or 'op'");
    o.gap = *seconds;
  }
  o.benchmarks = split_list(a.benchmarks);
  o.algorithms = split_list(a.algorithms);
  if (o.algorithms.size() > 1 && std::find(o.algorithms.begin(), o.algorithms.end(), "all") != o.algorithms.end())
    throw UsageError("--algorithms: 'all' stands alone (or name the algorithms)");
  o.dtypes.clear();
  for (const auto& d : split_list(dtypes_apply ? m.dtypes : std::string("float32"))) {
    auto t = comm::parse_dtype(d);
    if (t == comm::Dtype::byte)
      throw UsageError("--dtypes: 'byte' is not a reduction type (use int32, float32, float64, bfloat16)");
    o.dtypes.push_back(t);
  }
  if (o.dtypes.empty()) throw UsageError("--dtypes: empty list");
  o.reduction = comm::parse_reduction(a.op);
  if (o.reduction != comm::Reduction::sum && std::find(o.dtypes.begin(), o.dtypes.end(), comm::Dtype::bfloat16) != o.dtypes.end())
    throw UsageError("--op " + std::string(comm::to_string(o.reduction)) +
                     " with --dtypes bfloat16: bfloat16 is reduced by sum only (a user-defined operation)");
  o.levels.clear();
  for (const auto& l : split_list(a.levels)) o.levels.push_back(comm::parse_level(l));
  if (o.levels.empty()) throw UsageError("--levels: empty list");
  if (m.check < 0) throw UsageError("--check " + std::to_string(m.check) + ": must be >= 0");
  o.check_iterations = static_cast<int>(m.check);
  if (a.window < 1) throw UsageError("--window " + std::to_string(a.window) + ": must be >= 1");
  o.window = static_cast<int>(a.window);
  o.off_cache = a.off_cache;
  o.time_in_place = a.in_place;
  o.time_nonblocking = a.nonblocking_form;
  o.memory = comm::parse_memory(a.memory);
  if (a.wait == "blocking") o.wait = WaitMode::blocking;
  else if (a.wait == "yield") o.wait = WaitMode::yield;
  else if (!a.wait.empty()) throw UsageError("--wait '" + a.wait + "': use blocking or yield");
  o.corrupt_rank = a.corrupt_rank;
  o.total_bytes_column = a.total_bytes;
  if (!a.ranks.empty()) o.rank_counts = parse_rank_counts(a.ranks);
  if (!a.late_rank.empty()) {  // R or R:SECONDS
    const auto colon = a.late_rank.find(':');
    const auto rank = parse_int(a.late_rank.substr(0, colon));
    const auto seconds = colon == std::string::npos ? std::optional<double>(0) : parse_number(a.late_rank.substr(colon + 1));
    if (!rank || !seconds) throw UsageError("--test-late-rank '" + a.late_rank + "': use RANK or RANK:SECONDS");
    o.late_rank = *rank;
    o.late_seconds = *seconds;
  }
  if (!a.stall_rank.empty()) {  // R:SECONDS
    const auto colon = a.stall_rank.find(':');
    const auto rank = parse_int(a.stall_rank.substr(0, colon));
    const auto seconds = colon == std::string::npos ? std::optional<double>() : parse_number(a.stall_rank.substr(colon + 1));
    if (!rank || !seconds || !(*seconds > 0))
      throw UsageError("--test-stall-rank '" + a.stall_rank + "': use RANK:SECONDS (SECONDS > 0)");
    o.stall_rank = *rank;
    o.stall_seconds = *seconds;
  }
  return o;
}

compute::SuiteOptions ComputeArgs::resolve(const MeasureArgs& m) const {
  const ComputeArgs& a = *this;
  compute::SuiteOptions o;
  o.kernels.quick = m.quick;
  o.sweep.quick = m.quick;
  o.kernels.kernels = split_list(a.kernels);
  o.kernels.families = split_list(a.families);
  o.kernels.full_shapes = a.full_shapes;
  if (m.dtypes_given) o.kernels.dtypes = split_list(m.dtypes);
  if (m.budget != 0 || m.precision != 0 || m.iterations != 0) {
    stats::StopRule rule = m.quick ? compute::MeasureOptions::quick_rule() : compute::MeasureOptions::standard_rule();
    if (m.budget != 0) rule.budget_seconds = m.budget;
    if (m.precision != 0) rule.rel_half_width = m.precision;
    if (m.iterations != 0) rule.max_samples = static_cast<std::size_t>(m.iterations);
    o.kernels.stop = rule;
  }
  o.kernels.validate = m.check != 0;
  return o;
}

train::PipelineOptions TrainArgs::resolve(const MeasureArgs& m, const CommArgs& comm) const {
  const TrainArgs& a = *this;
  train::PipelineOptions o;
  o.model_sizes = split_list(a.model_sizes);
  o.configs = split_list(a.configs);
  o.dense = a.dense;
  o.recompute = a.recompute;
  o.train = a.train;
  o.quick = m.quick;
  o.steps = a.steps;
  o.comm_sizes_given = comm.sizes_given;
  return o;
}


void RunArgs::add(CLI::App& cmd) {
  cmd.add_option("--suite", suite, "comm | compute | train")->check(CLI::IsMember({"comm", "compute", "train"}));
  cmd.add_option("-o,--output", output, "results file (default results/<host>-<UTC time>.h5)");
  cmd.add_flag("--overwrite", overwrite, "replace an existing results file (-o)");
  cmd.add_option("--json", json, "also write the results as one JSON document to this file (every suite)");
  cmd.add_option("--csv", csv,
                 "also write the tables as CSV, PREFIX.<table>.csv (comm; compute and sweep; train has all four)");
  measure.add(cmd);
  comm.add(cmd);
  compute.add(cmd);
  train.add(cmd);
}

void RunArgs::check_combination() const {
  if (!comm.ranks.empty() && suite != "comm") throw UsageError("--ranks: the rank sweep is for --suite comm");
}

void check_run_words(const std::vector<std::string>& words, const std::string& suite) {
  CLI::App app;
  RunArgs args;
  args.add(app);
  refuse_empty_values(app);
  std::vector<std::string> reversed{words.rbegin(), words.rend()};  // CLI11 parses a vector from its back
  reversed.insert(reversed.end(), {suite, "--suite"});
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  args.check_combination();
  args.comm.resolve(args.measure, suite != "compute");
  args.compute.resolve(args.measure);
  args.train.resolve(args.measure, args.comm);
}

void MeasureArgs::add(CLI::App& cmd) {
  cmd.add_flag("--quick", quick, "short sweep for smoke runs and CI");
  cmd.add_option("--dtypes", dtypes, "comm: int32,float32,float64,bfloat16 (default float32); compute: float64,float32 (default both)")
      ->check(checks::names)->each([this](const std::string&) { dtypes_given = true; });
  // Checked when given (the defaults stand for "not given"): -i 0 is an error.
  cmd.add_option("-i,--iterations", iterations, "iteration cap per size (default 1000; --quick 200)")->check(CLI::PositiveNumber);
  cmd.add_option("--budget", budget, "time budget per size, seconds (default 0.25; --quick 0.03)")->check(checks::above(0));
  cmd.add_option("--precision", precision, "stop when the median's 95% CI half-width <= this fraction (0.02)")
      ->check(checks::fraction);
  cmd.add_option("--check", check, "validated iterations per size (0 disables)")->check(CLI::NonNegativeNumber);
}

void CommArgs::add(CLI::App& cmd) {
  const char* group = "comm suite (and the train suite's comm measurements)";
  cmd.add_option("-m,--sizes", sizes, "message sizes in bytes, OSU's -m: MIN:MAX, MAX, MIN: (K/M/G suffixes; default 1:4M, --quick 1:1M)")
      ->each([this](const std::string&) { sizes_given = true; })->group(group);
  cmd.add_option("-f,--factor", factor, "size step factor (default 2)")->check(checks::above(1))->group(group);
  cmd.add_option("-x,--warmup", warmup, "warm-up iterations per size (default 10; --quick 3)")->check(CLI::NonNegativeNumber)->group(group);
  cmd.add_option("--sweep-warmup", sweep_warmup,
                 "seconds of the operation before each sweep's first size, to settle the path (default: one "
                 "size's --budget, at most 0.2)")
      ->check(CLI::NonNegativeNumber)->group(group);
  cmd.add_option("--passes", passes,
                 "measure the sizes in this many passes, each with 1/N of a size's --budget and -i; a size's "
                 "statistics pool its passes (a slow phase of the machine then meets every size alike; default 1)")
      ->check(CLI::Range(1, 100))->group(group);
  cmd.add_option("--sync", sync, "barrier (OSU/IMB-comparable; default) | window (ReproMPI-style)")->group(group);
  cmd.add_option("--gap", gap,
                 "idle seconds before each timed iteration, or 'op': as long as the operation takes (default 0: back "
                 "to back, as OSU)")
      ->group(group);
  std::string names;
  for (const auto& b : comm::registry()) names += (names.empty() ? "" : ", ") + std::string(b.name);
  cmd.add_option("--algorithms", algorithms,
                 "besides the MPI library's own choice, measure these of its collective algorithms, each forced "
                 "through MPI_T (all: every one it has; `sextant info` lists them); results as BENCHMARK@ALGORITHM")
      ->check(checks::names)->group(group);
  cmd.add_option("--collectives,--benchmarks", benchmarks, "comma-separated benchmark names (default all: " + names + ")")
      ->check(checks::names)->group(group);
  cmd.add_option("--op", op, "reduction: sum (default) | max | min")->group(group);
  cmd.add_option("--levels", levels, "world,intra,inter (default world)")->check(checks::names)->group(group);
  cmd.add_option("--ranks", ranks,
                 "the rank sweep in one launch, A:B or a list (each on the level's first p ranks; default all ranks)")
      ->group(group);
  cmd.add_option("--window", window, "messages in flight for bandwidth benchmarks (default 64)")->group(group);
  cmd.add_flag("--off-cache", off_cache, "rotate through buffers larger than the last-level cache")->group(group);
  cmd.add_flag("--in-place", in_place, "time the MPI_IN_PLACE form where one exists")->group(group);
  cmd.add_flag("--nonblocking-form", nonblocking_form,
               "time collectives as MPI_I<coll> + MPI_Wait, as programs that overlap them call them")
      ->group(group);
  cmd.add_option("--memory", memory, "host | device (Kokkos memory space of the buffers)")->group(group);
  cmd.add_option("--wait", wait, "blocking | yield (default: yield when oversubscribed)")->group(group);
  cmd.add_flag("--total-bytes", total_bytes,
               "the size column in bytes the operation moves in all (algbw's numerator, as nccl-tests prints it), "
               "not the per-rank size swept")
      ->group(group);
  cmd.add_option("--test-corrupt-rank", corrupt_rank, "test hook: this rank corrupts what it receives")->group("");
  cmd.add_option("--test-late-rank", late_rank,
                 "test hook (window sync): RANK starts every repetition late; RANK:SECONDS waits that long first")
      ->group("");
  cmd.add_option("--test-stall-rank", stall_rank,
                 "test hook (window sync): RANK:SECONDS stalls that long before the first start of each size's first "
                 "two batches")
      ->group("");
}

void ComputeArgs::add(CLI::App& cmd) {
  const char* group = "compute suite";
  cmd.add_option("--kernels", kernels, "kernel names (default all)")->check(checks::names)->group(group);
  cmd.add_flag("--full-shapes", full_shapes, "the larger shape set of every kernel")->group(group);
  cmd.add_option("--families", families, "kernel families (default all)")->check(checks::names)->group(group);
}

void TrainArgs::add(CLI::App& cmd) {
  const char* group = "train suite";
  cmd.add_option("--configs", configs, "configurations of the sweep to run (default all)")->check(checks::names)->group(group);
  cmd.add_option("--model-sizes", model_sizes, "the proxy's model sizes, of small,medium,large (default all; --quick small,medium)")
      ->check(checks::names)->group(group);
  cmd.add_option("--dense", dense,
                 "GEMMs by portable (sextant's Kokkos kernels) or vendor (BLAS via Kokkos Kernels; the default where built)")
      ->group(group);
  cmd.add_option("--recompute", recompute,
                 "activation recomputation in every configuration: none (default), selective (the attention "
                 "probabilities) or full (each layer from its input); named tp2_recompute_full.small and so on")
      ->group(group);
  cmd.add_option("--train", train,
                 "one configuration instead of the sweep, as predict --train takes it: any model and layout, e.g. "
                 "layers=3,hidden=96,heads=6,seq=48,vocab=384,dp=2,zero=3 (its ranks: the run's)")
      ->group(group);
  cmd.add_option("--steps", steps, "measured steps per configuration (default: 10, 8 with --quick, more until 0.5 s)")
      ->check(CLI::PositiveNumber)->group(group);
}

}  // namespace sextant::cli
