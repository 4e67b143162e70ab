#pragma once
// The options of `sextant run`, one struct per suite: each registers its own options
// on the command (listed under its suite in --help) and resolves them into the options
// its suite's pipeline takes. MeasureArgs holds what the measuring suites share: a
// quick run, the element types measured (--dtypes: the comm suite's reduction types,
// the compute suite's precisions; each suite its own default) and a measurement's stop
// rule. The train suite measures communication and operators itself, so it takes the
// comm and compute options too.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "suites/comm/harness.hpp"
#include "suites/compute/suite.hpp"
#include "suites/train/pipeline.hpp"

namespace sextant::cli {

struct MeasureArgs {
  bool quick = false;
  std::string dtypes = "float32";
  bool dtypes_given = false;
  long long iterations = 0;  // 0: not given (each suite's default)
  double budget = 0, precision = 0;
  long long check = 1;
  void add(CLI::App& cmd);
};

struct CommArgs {
  std::string sizes, sync = "barrier", benchmarks, op = "sum", levels = "world", memory = "host", wait, gap, algorithms;
  bool sizes_given = false;
  double factor = 0, sweep_warmup = -1;
  long long warmup = -1, window = 64, passes = 1;
  bool off_cache = false, in_place = false, nonblocking_form = false, total_bytes = false;
  std::string ranks;  // the rank sweep, A:B or a list
  int corrupt_rank = -1;
  std::string late_rank;
  std::string stall_rank;
  void add(CLI::App& cmd);
  // dtypes_apply: --dtypes names reduction types (comm and train suites), not precisions.
  comm::Options resolve(const MeasureArgs& m, bool dtypes_apply) const;
};

struct ComputeArgs {
  std::string kernels, families;
  bool full_shapes = false;
  void add(CLI::App& cmd);
  compute::SuiteOptions resolve(const MeasureArgs& m) const;
};

struct TrainArgs {
  std::string configs, model_sizes, dense, recompute, train;
  int steps = 0;
  void add(CLI::App& cmd);
  train::PipelineOptions resolve(const MeasureArgs& m, const CommArgs& comm) const;
};

// Every option of `sextant run`: the run's own and each suite's.
struct RunArgs {
  std::string suite = "comm";
  std::string output;
  bool overwrite = false;
  std::string json, csv;
  MeasureArgs measure;
  CommArgs comm;
  ComputeArgs compute;
  TrainArgs train;
  void add(CLI::App& cmd);
  void check_combination() const;  // options that do not go together (UsageError)
};

// `sextant run` options given as words, e.g. a job script's --run-args, checked as the
// run will check them for this suite, without running it: UsageError naming what is
// wrong (a job must not queue for hours to fail on an option).
void check_run_words(const std::vector<std::string>& words, const std::string& suite);

}  // namespace sextant::cli
