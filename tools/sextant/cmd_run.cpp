// sextant run --suite comm|compute|train: measure, writing a results file.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/units.hpp"
#include "suites/comm/harness.hpp"
#include "suites/compute/suite.hpp"
#include "suites/train/pipeline.hpp"
#include "suites/common/json_results.hpp"
#include "suites/common/results.hpp"
#include "suites/common/runtime.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {
namespace {

struct RunArgs {
  std::string suite = "comm";
  std::string output;
  bool quick = false, overwrite = false;
  std::string sizes, sync = "barrier", benchmarks, dtypes = "float32", op = "sum", levels = "world",
                     memory = "host", wait;
  double factor = 0;
  long long iterations = 0, warmup = -1, check = 1, window = 64;
  double budget = 0, precision = 0;
  bool off_cache = false, in_place = false;
  std::string json, csv;
  bool total_bytes = false;
  int corrupt_rank = -1;
  std::string late_rank;
  std::string ranks;  // comm: the rank sweep, A:B or a list
  bool dtypes_given = false, sizes_given = false;
  std::string kernels, families, configs;  // compute, train
  std::string model_sizes;                 // train
  std::string dense;                       // train: portable | vendor (default: the proxy's)
  bool full_shapes = false;                // compute
  int steps = 0;                           // train
};

// SIGINT and SIGTERM (Ctrl-C, a scheduler's time limit, mpiexec forwarding either) end
// the run at once with 128 + the signal, never 0, and say where the measurements are:
// the results file holds every benchmark that finished, with complete = "no". Under
// mpiexec the launcher's own exit status decides what the shell sees (MPICH's Hydra
// returned 0 in 2 of 6 SIGTERMs here): the file's complete flag is the reliable record.
// Only async-signal-safe calls in the handler.
char interrupted_by_sigint[600], interrupted_by_sigterm[600];

extern "C" void on_interrupt(int signal) {
  const char* message = signal == SIGINT ? interrupted_by_sigint : interrupted_by_sigterm;
  const ssize_t written [[maybe_unused]] = ::write(STDERR_FILENO, message, std::strlen(message));  // one write: whole lines
  ::_exit(128 + signal);
}

void exit_on_interrupt(const std::string& results_path) {
  for (auto [buffer, name] : {std::pair{interrupted_by_sigint, "SIGINT"}, std::pair{interrupted_by_sigterm, "SIGTERM"}})
    std::snprintf(buffer, sizeof interrupted_by_sigint,
                  "sextant: interrupted by %s: what finished is in %s (meta complete = no)\n", name,
                  results_path.c_str());
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

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

comm::Options comm_options(const RunArgs& a) {
  comm::Options o;
  if (a.quick) comm::make_quick(o);
  if (!a.sizes.empty()) {
    try {
      o.sizes = parse_byte_range(a.sizes, o.sizes);
    } catch (const UsageError& e) {
      throw UsageError(std::string("-m/--sizes: ") + e.what());
    }
  }
  if (a.factor != 0) o.factor = a.factor;
  if (a.factor != 0 && !(a.factor > 1)) throw UsageError("-f/--factor " + std::to_string(a.factor) + ": must be > 1");
  if (a.iterations != 0) {
    if (a.iterations < 1) throw UsageError("-i/--iterations " + std::to_string(a.iterations) + ": must be >= 1");
    o.max_iterations = static_cast<std::size_t>(a.iterations);
    o.min_iterations = std::min(o.min_iterations, o.max_iterations);
  }
  if (a.warmup >= 0) o.warmup = static_cast<std::size_t>(a.warmup);
  if (a.budget != 0) {
    if (!(a.budget > 0)) throw UsageError("--budget " + std::to_string(a.budget) + ": must be > 0 seconds");
    o.budget_seconds = a.budget;
  }
  if (a.precision != 0) {
    if (!(a.precision > 0)) throw UsageError("--precision " + std::to_string(a.precision) + ": must be > 0");
    o.rel_ci_half_width = a.precision;
  }
  o.sync = comm::parse_sync(a.sync);
  o.benchmarks = split_list(a.benchmarks);
  o.dtypes.clear();
  for (const auto& d : split_list(a.suite == "compute" ? std::string("float32") : a.dtypes)) {
    auto t = comm::parse_dtype(d);
    if (t == comm::Dtype::byte) throw UsageError("--dtypes: 'byte' is not a reduction type (use int32, float32, float64)");
    o.dtypes.push_back(t);
  }
  if (o.dtypes.empty()) throw UsageError("--dtypes: empty list");
  o.reduction = comm::parse_reduction(a.op);
  o.levels.clear();
  for (const auto& l : split_list(a.levels)) o.levels.push_back(comm::parse_level(l));
  if (o.levels.empty()) throw UsageError("--levels: empty list");
  if (a.check < 0) throw UsageError("--check " + std::to_string(a.check) + ": must be >= 0");
  o.check_iterations = static_cast<int>(a.check);
  if (a.window < 1) throw UsageError("--window " + std::to_string(a.window) + ": must be >= 1");
  o.window = static_cast<int>(a.window);
  o.off_cache = a.off_cache;
  o.time_in_place = a.in_place;
  o.memory = comm::parse_memory(a.memory);
  if (a.wait == "blocking") o.wait = WaitMode::blocking;
  else if (a.wait == "yield") o.wait = WaitMode::yield;
  else if (!a.wait.empty()) throw UsageError("--wait '" + a.wait + "': use blocking or yield");
  o.corrupt_rank = a.corrupt_rank;
  o.total_bytes_column = a.total_bytes;
  if (!a.ranks.empty()) {
    if (a.suite != "comm") throw UsageError("--ranks: the rank sweep is for --suite comm");
    o.rank_counts = parse_rank_counts(a.ranks);
  }
  if (!a.late_rank.empty()) {  // R or R:SECONDS
    const auto colon = a.late_rank.find(':');
    const auto rank = parse_int(a.late_rank.substr(0, colon));
    const auto seconds = colon == std::string::npos ? std::optional<double>(0) : parse_number(a.late_rank.substr(colon + 1));
    if (!rank || !seconds) throw UsageError("--test-late-rank '" + a.late_rank + "': use RANK or RANK:SECONDS");
    o.late_rank = *rank;
    o.late_seconds = *seconds;
  }
  return o;
}

compute::SuiteOptions compute_options(const RunArgs& a) {
  compute::SuiteOptions o;
  o.kernels.quick = a.quick;
  o.sweep.quick = a.quick;
  o.kernels.kernels = split_list(a.kernels);
  o.kernels.families = split_list(a.families);
  o.kernels.full_shapes = a.full_shapes;
  if (a.dtypes_given) o.kernels.dtypes = split_list(a.dtypes);
  if (a.budget != 0 || a.precision != 0 || a.iterations != 0) {
    stats::StopRule rule = a.quick ? compute::MeasureOptions::quick_rule() : compute::MeasureOptions::standard_rule();
    if (a.budget != 0) rule.budget_seconds = a.budget;
    if (a.precision != 0) rule.rel_half_width = a.precision;
    if (a.iterations != 0) rule.max_samples = static_cast<std::size_t>(a.iterations);
    o.kernels.stop = rule;
  }
  o.kernels.validate = a.check != 0;
  return o;
}

train::PipelineOptions train_options(const RunArgs& a) {
  train::PipelineOptions o;
  o.model_sizes = split_list(a.model_sizes);
  o.configs = split_list(a.configs);
  o.dense = a.dense;
  o.quick = a.quick;
  o.steps = a.steps;
  o.comm_sizes_given = a.sizes_given;
  return o;
}

}  // namespace

void register_run(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Measure a suite and write a results file (run under mpiexec)");
  cmd->add_option("--suite", args->suite, "comm | compute | train")->check(CLI::IsMember({"comm", "compute", "train"}));
  cmd->add_option("-o,--output", args->output, "results file (default results/<host>-<UTC time>.h5)");
  cmd->add_flag("--quick", args->quick, "short sweep for smoke runs and CI");
  cmd->add_flag("--overwrite", args->overwrite, "replace an existing results file (-o)");
  cmd->add_option("-m,--sizes", args->sizes, "message sizes in bytes, OSU's -m: MIN:MAX, MAX, MIN: (K/M/G suffixes; default 1:4M, --quick 1:1M)")
      ->each([args](const std::string&) { args->sizes_given = true; });
  cmd->add_option("-f,--factor", args->factor, "size step factor (default 2)");
  // Checked when given (the defaults stand for "not given"): -i 0 and -x -5 are errors.
  cmd->add_option("-i,--iterations", args->iterations, "iteration cap per size (default 1000; --quick 200)")->check(CLI::PositiveNumber);
  cmd->add_option("-x,--warmup", args->warmup, "warm-up iterations per size (default 10; --quick 3)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--sync", args->sync, "barrier (OSU/IMB-comparable; default) | window (ReproMPI-style)");
  cmd->add_option("--budget", args->budget, "time budget per size, seconds (default 0.25; --quick 0.03)");
  cmd->add_option("--precision", args->precision, "stop when the median's 95% CI half-width <= this fraction (0.02)");
  std::string benchmarks;
  for (const auto& b : comm::registry()) benchmarks += (benchmarks.empty() ? "" : ", ") + std::string(b.name);
  cmd->add_option("--collectives,--benchmarks", args->benchmarks,
                  "comma-separated benchmark names (default all: " + benchmarks + ")");
  cmd->add_option("--dtypes", args->dtypes, "comm: int32,float32,float64 (default float32); compute: float64,float32 (default both)")
      ->each([args](const std::string&) { args->dtypes_given = true; });
  cmd->add_option("--kernels", args->kernels, "compute: kernel names (default all)");
  cmd->add_flag("--full-shapes", args->full_shapes, "compute: the larger shape set of every kernel");
  cmd->add_option("--families", args->families, "compute: kernel families (default all)");
  cmd->add_option("--configs", args->configs, "train: configurations of the sweep to run (default all)");
  cmd->add_option("--model-sizes", args->model_sizes,
                  "train: the proxy's model sizes, of small,medium,large (default all; --quick small,medium)");
  cmd->add_option("--dense", args->dense,
                  "train: GEMMs by portable (sextant's Kokkos kernels) or vendor (BLAS via Kokkos Kernels; the "
                  "default where built)");
  cmd->add_option("--steps", args->steps,
                  "train: measured steps per configuration (default: 10, 8 with --quick, more until 0.5 s)");
  cmd->add_option("--op", args->op, "reduction: sum (default) | max | min");
  cmd->add_option("--levels", args->levels, "world,intra,inter (default world)");
  cmd->add_option("--ranks", args->ranks,
                  "comm: the rank sweep in one launch, A:B or a list (each on the level's first p ranks; default "
                  "all ranks)");
  cmd->add_option("--check", args->check, "validated iterations per size (0 disables)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--window", args->window, "messages in flight for bandwidth benchmarks (default 64)");
  cmd->add_flag("--off-cache", args->off_cache, "rotate through buffers larger than the last-level cache");
  cmd->add_flag("--in-place", args->in_place, "time the MPI_IN_PLACE form where one exists");
  cmd->add_option("--memory", args->memory, "host | device (Kokkos memory space of the buffers)");
  cmd->add_option("--wait", args->wait, "blocking | yield (default: yield when oversubscribed)");
  cmd->add_option("--json", args->json, "also write the results as one JSON document to this file (every suite)");
  cmd->add_option("--csv", args->csv,
                  "also write the tables as CSV, PREFIX.<table>.csv (comm; compute and sweep; train has all four)");
  cmd->add_flag("--total-bytes", args->total_bytes,
                "comm: the size column in bytes the operation moves in all (algbw's numerator, as nccl-tests "
                "prints it), not the per-rank size swept");
  cmd->add_option("--test-corrupt-rank", args->corrupt_rank, "test hook: this rank corrupts what it receives")->group("");
  cmd->add_option("--test-late-rank", args->late_rank,
                  "test hook (window sync): RANK starts every repetition late; RANK:SECONDS waits that long first")
      ->group("");
  cmd->callback([&ctx, args] {
    comm::Options comm_opts = comm_options(*args);
    compute::SuiteOptions compute_opts = compute_options(*args);
    Runtime rt(ctx.argc, ctx.argv);
    if (!comm_opts.rank_counts.empty() && comm_opts.rank_counts.back() > rt.size())  // before any file is made
      throw UsageError("--ranks: " + std::to_string(comm_opts.rank_counts.back()) +
                       " ranks asked for, the launch has " + std::to_string(rt.size()));
    try {
      std::string path = args->output;
      if (path.empty()) {
        if (rt.is_root()) std::filesystem::create_directories("results");
        path = "results/" + default_results_name(rt.machine().hostname);
      }
      // Results are written as they are measured, so an existing file would be truncated
      // before the new run has measured anything: refused unless asked for. Decided on
      // rank 0 (the writer), for every rank.
      int exists = rt.is_root() && !args->overwrite && std::filesystem::exists(path) ? 1 : 0;
      SEXTANT_MPI_CHECK(MPI_Bcast(&exists, 1, MPI_INT, 0, MPI_COMM_WORLD));
      if (exists)
        throw UsageError("-o " + path + ": exists; sextant run replaces a results file only with --overwrite");
      exit_on_interrupt(path);
      std::unique_ptr<ResultsFile> results;
      std::unique_ptr<JsonResults> json;
      if (rt.is_root()) {
        // The JSON first: an unwritable --json path stops the run before the results file exists.
        if (!args->json.empty() || !args->csv.empty())
          json = std::make_unique<JsonResults>(args->json, args->csv, rt.provenance(), args->suite);
        results = std::make_unique<ResultsFile>(path, rt.provenance());
        results->root().group("meta").set_attr("suite", args->suite);
        std::cerr << "sextant: writing " << path << "\n";
      }
      comm::Outcome outcome;
      try {
        if (args->suite == "comm") outcome = comm::run_comm_suite(rt, comm_opts, results.get(), json.get());
        if (args->suite == "compute")
          outcome.wrong = compute::run_compute_suite(rt, compute_opts, results.get(), json.get());
        if (args->suite == "train")
          outcome = train::run_train_pipeline(rt, train_options(*args), comm_opts, compute_opts, path, results,
                                              json.get());
      } catch (const UsageError&) {
        // Raised before anything is measured: the files just made hold nothing.
        if (rt.is_root()) {
          results.reset();
          json.reset();
          std::error_code ec;
          std::filesystem::remove(path, ec);
          if (!args->json.empty()) std::filesystem::remove(args->json, ec);
          if (!args->csv.empty())
            for (const auto& table : JsonResults::csv_tables(args->suite))
              std::filesystem::remove(JsonResults::csv_path(args->csv, table), ec);
        }
        throw;
      }
      // Wrong values and missing sizes are recorded results: the run did finish.
      if (results) results->mark_complete();
      if (json) json->mark_complete();
      if (outcome.wrong > 0) {
        if (rt.is_root())
          std::cerr << "sextant: validation FAILED: " << outcome.wrong << " wrong results (see WRONG lines above)\n";
        ctx.exit_code = 1;
      }
      if (outcome.unmeasured > 0) {
        if (rt.is_root())
          std::cerr << "sextant: " << outcome.unmeasured
                    << " sizes could not be measured: stored as missing (NaN, the reason in 'unmeasured'), "
                       "left out of fits\n";
        ctx.exit_code = 1;
      }
    } catch (const UsageError&) {
      if (!rt.is_root()) throw ReportedElsewhere{2};  // raised alike on every rank: rank 0 says it
      throw;
    } catch (const std::exception& e) {
      if (rt.size() > 1) abort_all("sextant: rank " + std::to_string(rt.rank()) + ": " + e.what());
      throw;
    }
  });
}

}  // namespace sextant::cli
