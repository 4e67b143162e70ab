#pragma once
// `sextant run --suite train`: a sweep of training configurations on this run's
// ranks, each predicted from the model file fitted earlier in the same run and then
// measured, with the error per configuration and a summary.
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "models/train_plan.hpp"
#include "suites/compute/measure.hpp"
#include "suites/train/proxy.hpp"

namespace sextant {
class Runtime;
class ResultsFile;
class JsonResults;
}  // namespace sextant

namespace sextant::train {

struct SweepEntry {
  std::string name;  // "dp2.small"
  model::TrainConfig config;
  double lr = 1e-2;  // AdamW's learning rate: the large size diverges at 1e-2 within 10 steps
};

// The proxy's model sizes, smallest first: small, medium, large.
const std::vector<std::string>& model_sizes();

// Strategies for `ranks` ranks ({DP, TP, PP-GPipe, PP-1F1B, FSDP (DP with ZeRO-3)} and, at
// 4, hybrids) x the
// model sizes asked for (an unknown one: UsageError), named "<strategy><ranks>.<size>".
std::vector<SweepEntry> default_sweep(int ranks, const std::vector<std::string>& sizes);

struct SweepOptions {
  int steps = 10, warmup = 3;
  // At least this much measured time per configuration (more steps, up to max_steps):
  // the median of a small model's steps needs more of them than a large model's.
  double min_seconds = 0.5;
  int max_steps = 200;
  // Then more steps until the median step is known within +-5% (95% CI), for at most
  // 10 s of steps: the judged error's goal is 5% (median) and the instrument should
  // not be the larger part of it (see TrainRunOptions::precision).
  double precision = 0.05, max_seconds = 10;
  std::string model_path;  // comm + compute model fitted in this run
  std::string level = "world";
  // The kernel cases the plans run (each shape in each cache state; what the compute
  // suite measured for the model): each configuration's own are measured again just
  // before its steps, every rank at once as the suite measured them, with the partners'
  // wait, and the configuration is predicted from them, the rest of the model as fitted. This
  // machine runs at 0.8-1.35x its usual time per operator for minutes at a time (a
  // co-tenant on the host): a sweep whose operators were measured in one state and
  // whose steps ran in another misses by that much whatever the predictor does (a CI
  // run measured dp2.medium and tp2.medium at -10% and -6%, then the machine slowed
  // and tp_sp2.medium and fsdp2.medium missed by -32% and -30%, the operators 1.14x
  // slower after the sweep than in the model). Measured side by side, the error is the
  // predictor's; the prediction from the model file as fitted is kept beside it (and
  // check_operator_drift says how far the machine moved over the run), and so is the
  // kernels' time over the model's (kernels_vs_model). Empty: from the model file.
  compute::MeasureOptions kernels;
  // The steps' own disturbance: the share in which a rank's kernels took more than
  // 1.25x their typical time (disturbed_steps). A configuration with more than
  // disturbed_tolerance of its steps slowed is measured again, up to `attempts` runs,
  // and the least disturbed run kept: a co-tenant slowed 20 of one configuration's 30
  // steps to 1.45x on one rank. Undisturbed runs show up to 18% slowed steps (small
  // model).
  // Measuring again costs at most retry_seconds per sweep in all (wall time of the
  // extra runs, the slowest rank's): on a host where the checks flag many
  // configurations (a CI run measured 34 again and took 530 s against ~170 s), the
  // rest are kept as first measured, with their disturbance recorded, and the run
  // says so. A third of a quiet sweep's time.
  bool check_speed = true;
  // On more than one rank, each model's single-rank baseline: the same model, data and
  // global batch trained by rank 0 alone (the others wait), measured before the first
  // configuration of that model; every configuration's speedup is its step over this.
  bool baseline = true;
  double disturbed_tolerance = 0.40;
  int attempts = 3;
  double retry_seconds = 60;
};

struct SweepRow {
  std::string name;
  double measured = 0, ci_lo = 0, ci_hi = 0;  // median step time and its 95% CI
  double predicted = 0;  // with the configuration's kernels as measured just before its steps (SweepOptions::kernels)
  double error = 0;      // (predicted - measured) / measured
  // From the model file as fitted, every kernel as measured before the sweep.
  double predicted_from_file = 0, error_from_file = 0;
  // The prediction without the measurements at the plan's exact shapes: operator models only.
  double predicted_models_only = 0, error_models_only = 0;
  double loss_first = 0, loss_last = 0;
  // The single-rank baseline's median step over this configuration's (1 for the
  // baseline itself); NaN where no baseline was measured.
  double speedup = std::numeric_limits<double>::quiet_NaN();
};

// Collective over MPI_COMM_WORLD; rank 0 predicts, prints and records. Returns the rows (rank 0).
std::vector<SweepRow> run_train_sweep(Runtime& rt, const std::vector<SweepEntry>& sweep, const SweepOptions& options,
                                      ResultsFile* results, JsonResults* json = nullptr);

// The operators of the sweep measured again after it (the same cases and stop rule as
// before it, every rank at once), against the model's measurements of the same cases:
// the time-weighted ratio, and the median case's. A machine whose speed changed
// during the run (a co-tenant on the same cores, a frequency change) shows here,
// independently of any prediction: a step timed at another speed than its operators
// is no test of the model. Rank 0 prints it and records /train's operator_drift and
// operator_drift_median attributes (and JSON "operator_drift"); returns the ratio
// (every rank), or nothing when no case of the model was measured again.
std::optional<double> check_operator_drift(Runtime& rt, compute::MeasureOptions cases, const std::string& model_path,
                                           ResultsFile* results, JsonResults* json = nullptr);

// The 'median |error| X%  max |error| Y%' line.
std::string summary_line(const std::vector<SweepRow>& rows);

}  // namespace sextant::train
