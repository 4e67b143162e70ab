#include "suites/train/layout.hpp"

#include <string>

#include "core/error.hpp"
#include "suites/common/mpi.hpp"

namespace sextant::train {

Layout::Layout(const model::TrainConfig& config, MPI_Comm world_in)
    : dp(config.dp), tp(config.tp), pp(config.pp), ep(config.ep) {
  const int size = comm_size(world_in);
  if (size != config.ranks())
    throw UsageError("the grid --dp " + std::to_string(dp) + " x --tp " + std::to_string(tp) + " x --pp " +
                     std::to_string(pp) + " needs " + std::to_string(config.ranks()) + " ranks, not " +
                     std::to_string(size));
  SEXTANT_MPI_CHECK(MPI_Comm_dup(world_in, &world));
  world_rank = comm_rank(world);
  tp_rank = world_rank % tp;
  dp_rank = world_rank / tp % dp;
  pp_rank = world_rank / (tp * dp);
  SEXTANT_MPI_CHECK(MPI_Comm_split(world, pp_rank * dp + dp_rank, tp_rank, &tp_comm));
  SEXTANT_MPI_CHECK(MPI_Comm_split(world, pp_rank * tp + tp_rank, dp_rank, &dp_comm));
  SEXTANT_MPI_CHECK(MPI_Comm_split(world, dp_rank * tp + tp_rank, pp_rank, &pp_comm));
}

Layout::~Layout() {
  for (MPI_Comm* c : {&tp_comm, &dp_comm, &pp_comm, &world})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

}  // namespace sextant::train
