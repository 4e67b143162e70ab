#pragma once
// The training proxy: a small transformer trained for real (embedding, L pre-LN layers of
// attention and a GELU MLP, final layernorm, logits, softmax cross-entropy) on synthetic
// token data, on a DP x TP x PP grid of MPI ranks, executing exactly the decomposition of
// models/train_plan.hpp. It measures step time and where the time goes; the loss shows
// that the step computes what it claims (every layout gives the single-rank loss curve).
#include <mpi.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/train_plan.hpp"
#include "suites/common/mpi.hpp"

namespace sextant::train {

struct TrainRunOptions {
  int steps = 20;        // measured steps (at least)
  // Then more steps, up to max_steps, until the measured steps add up to min_seconds: a
  // small model's 8 steps of ~5 ms each are too few for a median on a shared machine
  // (two of eight runs had a slow mode in half the steps). Decided from values every
  // rank has, so all ranks stop together.
  double min_seconds = 0;
  int max_steps = 0;     // 0: steps
  // Then, while the 95% CI of the median step is wider than +-precision of it, more
  // steps (up to max_steps, or until the measured steps add up to max_seconds): a few
  // seconds of a co-tenant's load on a shared machine slow most of a large model's
  // first steps, and only more steps after it show the median (0: off).
  double precision = 0, max_seconds = 0;
  int warmup = 2;        // steps run before the measured ones (their loss is recorded too)
  std::uint64_t seed = 1;  // parameters and data; the same for every parallel layout
  WaitMode wait = WaitMode::blocking;  // yield when ranks outnumber cores
  // Optimizer hyper-parameters (they change the loss, never the cost).
  double lr = 1e-2, weight_decay = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool trace = false;    // record the ops of step 0 (stale: of step staleness) into TrainResult::executed
  bool profile = false;  // time per (kernel, shape) over the measured steps: TrainResult::kernels
  // Test hooks for the gradient check (one rank only): every step trains on step 0's
  // samples, and the squared norm of each step's gradient is recorded.
  bool repeat_first_batch = false;
  bool gradient_norm = false;
  // Test hook for ZeRO-3: the parameters a unit's release frees become NaN, so a use
  // without its gather cannot go unnoticed (the gathered copy lives where the unit's
  // parameters always do: without the hook a missing gather would read stale values).
  bool poison_released = false;
};

// Seconds one rank spent in one step, by kind. compute = kernels (fenced); *_comm =
// communication on the critical path (blocking calls, and waits for non-blocking ones);
// pipeline_idle = waiting for a neighbouring stage to produce the activation or gradient
// this stage needs next (the pipeline bubble, and skew between stages).
struct PhaseTimes {
  double total = 0;          // the rank's step time
  double forward = 0, backward = 0, optimizer = 0;
  double tp_comm = 0, pp_comm = 0, dp_comm = 0, ep_comm = 0;
  double pipeline_idle = 0;
  double other() const {     // data staging, host bookkeeping, timer overhead
    return total - forward - backward - optimizer - tp_comm - pp_comm - dp_comm - ep_comm - pipeline_idle;
  }
};

struct RankCoords {
  int dp = 0, tp = 0, pp = 0;
};

struct TrainResult {
  model::TrainConfig config;
  int ranks = 1, steps = 0, warmup = 0;
  std::vector<double> loss;        // warmup + steps entries: mean token loss of each step
  std::vector<double> gradient_norm2;  // with options.gradient_norm: |g|^2 of each step's gradient
  std::vector<double> step_time;   // steps entries: max over ranks of the rank's step time
  std::vector<PhaseTimes> samples; // steps x ranks, row-major: every rank's phases per step
  std::vector<RankCoords> coords;  // per world rank: its place on the grid
  // With options.profile, this rank's kernels over the measured steps:
  // "kernel shape" -> (total seconds, calls).
  std::map<std::string, std::pair<double, long>> kernels;
  model::StagePlan executed;       // with options.trace: what this rank ran in that step (its
                                   // stage's plan as traced; compare with plan_step)

  const PhaseTimes& phases(int step, int rank) const { return samples[std::size_t(step) * ranks + rank]; }
  PhaseTimes mean_phases(int rank) const;  // over the measured steps
  double median_step_time() const;
};

// Collective over `world` (its size must be config.ranks()); every rank gets the whole
// result. Throws UsageError for an invalid configuration, Error on a failed run.
TrainResult run_training(const model::TrainConfig& config, const TrainRunOptions& options, MPI_Comm world);

// The dense path the proxy runs unless told otherwise: the vendor's BLAS where this
// build has Kokkos Kernels (what frameworks call), else the portable kernels.
model::DensePath default_dense_path();

}  // namespace sextant::train
