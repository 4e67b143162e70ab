#pragma once
// Predicts one training step of a StepPlan from a model file: operator times from the
// compute model, communication from the collective models, assembled by replaying the
// pipeline schedule the proxy runs (models/pipeline_schedule.hpp):
//
//   per micro-batch on stage s:  F_s = forward compute + its TP collectives
//                                B_s = backward compute + its TP collectives
//   an action starts when its stage is free and its input has arrived: a message sent
//   when the neighbour's action ends takes the receiving stage what receiving it costs
//   once posted (the late_receive benchmark: a copy for an eager message, the handshake
//   and transfer for a rendezvous one; without it the Hockney split's beta n) and
//   arrives no sooner than its one-way time (the ping-pong's) after the send. Each stage's last action is followed by its gradient sync (exposed
//   part: all of it, or with overlap what the last micro-batch's backward compute does
//   not hide) and its optimizer step; the step ends with the last stage to finish.
//
// With free messages and equal stages this is the classic (M + S - 1)(F + B) for GPipe
// and 1F1B alike; with latency it is not: 1F1B keeps few micro-batches in flight, so a
// stage waits a round trip between neighbours in every cycle where the work in flight
// does not cover it. The breakdown is the finishing stage's and adds up to the total:
// its compute, TP collectives, the experts' all-to-alls (ep communication), received
// transfers (pp communication), waits (pipeline bubble), exposed gradient sync and
// optimizer.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "models/comm_model.hpp"
#include "models/compute_model.hpp"
#include "models/sync_model.hpp"
#include "models/train_plan.hpp"

namespace sextant::model {

// Which communicator level's models cost each kind of traffic.
struct LevelMap {
  std::string tp = "world", dp = "world", pp = "world", ep = "world";
  const std::string& of(Traffic t) const {
    switch (t) {
      case Traffic::tp: return tp;
      case Traffic::dp: return dp;
      case Traffic::ep: return ep;
      case Traffic::pp: break;
    }
    return pp;
  }
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
  double forward_tp = 0, backward_tp = 0;            // per micro-batch, TP collectives
  double forward_dp = 0, backward_dp = 0;            // per micro-batch, ZeRO-3's parameter gathers
  double forward_ep = 0, backward_ep = 0;            // per micro-batch, the experts' all-to-alls
  double dp_total = 0, dp_exposed = 0, optimizer = 0;  // per step
  // From the replayed schedule, per step: waiting for a neighbour, receiving transfers,
  // the host's share of the messages it sends and receives while it computes
  // (SyncModel::overhead; in the breakdown's pp communication with the transfers), and
  // when the stage's step ends (its last action, gradient sync and optimizer).
  double waits = 0, transfers = 0, message_overhead = 0, finish = 0;
};

struct StepPrediction {
  std::vector<StageTimes> stages;
  int micro_batches = 1, critical_stage = 0;  // the stage that finishes last
  double total = 0;
  double bubble_fraction = 0;  // the ideal (S - 1) / (M + S - 1); the replay's waits are in the breakdown
  std::vector<std::pair<std::string, double>> breakdown;  // adds up to total
  std::vector<std::string> notes;                         // uncalibrated families, extrapolations
};

// sync: the partners' wait at each blocking collective (models/sync_model.hpp); none:
// every rank is assumed to arrive at once.
StepPrediction predict_step(const StepPlan& plan, const CommModel& comm, const ComputeModel& compute,
                            const LevelMap& levels = {}, const SyncModel* sync = nullptr, CacheWalkMemo* walks = nullptr);

// An op's hot time (its cost with its operands cached), the cache walk's clock. dtype:
// the step's (an op with its own, ComputeOp::dtype, is costed in that).
OpSeconds hot_seconds(const ComputeModel& compute, const std::string& dtype);

// The dense path a configuration's text names (dense=...), else the one the model's
// operators were measured on (the train suite measures its proxy's): what predict
// --train, the Python module and the exporters cost.
void choose_dense_path(TrainConfig& config, const std::string& text, const ComputeModel& compute);

// What predict_step charges each compute op of a stage, by op name: forward and backward
// of one micro-batch, the optimizer of one step, each in the cache state the step leaves
// it. For tools that lay the step out in their own terms (the ASTRA-sim workload export).
std::map<std::string, double> stage_op_seconds(const StepPlan& plan, int stage, const ComputeModel& compute);

// What the step predictor costs one call of `op` at, given the stage's cache state
// (in the step's dtype, or the op's own).
double op_cost_in_step(const ComputeModel& compute, const std::string& dtype, const ComputeOp& op,
                       const std::map<std::string, OperandMisses>& misses);

}  // namespace sextant::model
