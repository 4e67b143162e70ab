#pragma once
// The DP x TP x PP grid of ranks and its communicators. Rank order is Megatron's:
// tensor-parallel ranks vary fastest (they exchange the most, so they should share a
// node), then data-parallel, then pipeline stages:
//   world rank = (pp_rank * dp + dp_rank) * tp + tp_rank.
#include <mpi.h>

#include "models/train_plan.hpp"

namespace sextant::train {

class Layout {
 public:
  Layout(const model::TrainConfig& config, MPI_Comm world);  // collective over world
  ~Layout();
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;

  int dp = 1, tp = 1, pp = 1;
  int dp_rank = 0, tp_rank = 0, pp_rank = 0;  // pp_rank is the stage
  int world_rank = 0;
  MPI_Comm world = MPI_COMM_NULL;    // a duplicate: the proxy's traffic stays apart
  MPI_Comm dp_comm = MPI_COMM_NULL;  // same stage and tp rank; rank = dp_rank
  MPI_Comm tp_comm = MPI_COMM_NULL;  // same stage and dp rank; rank = tp_rank
  MPI_Comm pp_comm = MPI_COMM_NULL;  // same dp and tp rank; rank = stage

  // Expert parallelism (model::TrainConfig::ep): 1, or the dp group, whose ranks then
  // each hold experts / ep of every MoE layer's experts and exchange tokens over dp_comm.
  int ep = 1;
  int ep_rank() const { return ep > 1 ? dp_rank : 0; }

  bool first_stage() const { return pp_rank == 0; }
  bool last_stage() const { return pp_rank == pp - 1; }
};

}  // namespace sextant::train
