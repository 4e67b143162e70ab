#pragma once
// Pipeline schedules: the order in which one stage runs the forward and backward passes
// of the step's micro-batches. The training proxy (suites/train/proxy.cpp) receives what
// an action needs before running it and sends what it produced after, so these lists
// are the whole schedule; the step predictor replays the same lists.
//   GPipe: every forward, then every backward (activations of all M micro-batches live).
//   1F1B (PipeDream-flush, Megatron's default): stage s runs min(S - s - 1, M) warm-up
//   forwards, then alternates one forward and one backward, then drains the remaining
//   backwards; at most S - s micro-batches are in flight.
// Both run backwards in micro-batch order, so gradients accumulate in the same order and
// the two schedules give identical results. Bubble fraction (S-1)/(M+S-1) for both.
#include <vector>

#include "models/train_plan.hpp"

namespace sextant::model {

struct PipelineAction {
  enum Kind { forward, backward } kind;
  int micro;
  bool operator==(const PipelineAction&) const = default;
};

std::vector<PipelineAction> schedule_actions(Schedule schedule, int stages, int stage, int micro_batches);

// Activation slots a stage needs: micro-batches whose forward ran and backward did not.
int slots_needed(Schedule schedule, int stages, int stage, int micro_batches);

}  // namespace sextant::model
