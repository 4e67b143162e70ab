#pragma once
// Predicts one training step of a StepPlan from a model file: operator times from the
// compute model, communication from the collective models, assembled as a pipeline:
//
//   per micro-batch on stage s:  F_s = forward compute + TP comm + activation send
//                                B_s = backward compute + TP comm + gradient send
//   pipeline (GPipe and 1F1B alike, uniform micro-batches):
//                                (M + S - 1) (F + B) of the slowest stage
//   bubble:                      (S - 1) (F + B), i.e. the fraction (S - 1)/(M + S - 1)
//   then gradient sync (exposed part: all of it, or with overlap what the last
//   micro-batch's backward compute does not hide) and the optimizer step.
//
// The breakdown adds up to the total.
#include <string>
#include <utility>
#include <vector>

#include "models/comm_model.hpp"
#include "models/compute_model.hpp"
#include "models/train_plan.hpp"

namespace sextant::model {

// Which communicator level's models cost each kind of traffic.
struct LevelMap {
  std::string tp = "world", dp = "world", pp = "world";
};

// The levels a layout's traffic crosses with ranks_per_node ranks per node, ranks in
// Megatron's order (tensor-parallel ranks consecutive, then data-parallel, then the
// pipeline stages): a group whose ranks all fit in one node is costed on "intra", one
// that spans nodes on "inter" (its slowest link; a node-aware algorithm would do
// better). A level the comm model has no fits for falls back to "world", with a note.
LevelMap placed_levels(const TrainConfig& config, int ranks_per_node, const CommModel& comm,
                       std::vector<std::string>* notes = nullptr);

struct StageTimes {
  double forward_compute = 0, backward_compute = 0;  // per micro-batch
  double tp_comm = 0;                                // per micro-batch, forward + backward
  double pp_comm = 0;                                // per micro-batch, activation + gradient sends
  double dp_total = 0, dp_exposed = 0, optimizer = 0;  // per step
  double per_micro_batch() const { return forward_compute + backward_compute + tp_comm + pp_comm; }
};

struct StepPrediction {
  std::vector<StageTimes> stages;
  int micro_batches = 1, critical_stage = 0;
  double total = 0;
  double bubble_fraction = 0;
  std::vector<std::pair<std::string, double>> breakdown;  // adds up to total
  std::vector<std::string> notes;                         // uncalibrated families, extrapolations
};

StepPrediction predict_step(const StepPlan& plan, const CommModel& comm, const ComputeModel& compute,
                            const LevelMap& levels = {});

}  // namespace sextant::model
