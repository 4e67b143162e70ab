#pragma once
// Every way to lay a training step out on N ranks, ranked by its predicted step time:
// each (dp, tp, pp, micro-batch, schedule, sequence parallelism, and for a mixture of
// experts ep = 1 or dp) the plan accepts for the model is planned
// and costed by the step predictor, exactly as `sextant predict --train` costs one.
#include <vector>

#include "models/step_predictor.hpp"

namespace sextant::model {

struct RankedLayout {
  TrainConfig config;       // the base configuration with this layout
  LevelMap levels;          // where its traffic was costed
  StepPrediction prediction;
  double memory_bytes = 0;  // per rank, the largest stage's step_working_set_bytes
};

struct LayoutSearch {
  std::vector<RankedLayout> layouts;  // fastest first (ties: less memory first)
  long long candidates = 0;           // (dp, tp, pp, micro-batch, schedule, sp, ep) tried
  long long over_memory = 0;          // valid layouts left out by the memory limit
};

// memory_limit_bytes <= 0: no limit. Layouts the plan rejects (heads or vocabulary not
// divisible by tp, fewer layers than stages, a batch that does not split) are skipped.
// ranks_per_node > 0: each layout's traffic on the levels it crosses (placed_levels),
// instead of `levels`.
LayoutSearch search_layouts(const TrainConfig& base, int ranks, const CommModel& comm, const ComputeModel& compute,
                            const LevelMap& levels = {}, double memory_limit_bytes = 0, int ranks_per_node = 0,
                            const SyncModel* sync = nullptr);

}  // namespace sextant::model
