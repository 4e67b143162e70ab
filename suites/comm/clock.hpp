#pragma once
// Clock synchronisation for window-mode timing (after ReproMPI/SKaMPI): every rank
// estimates the offset of its MPI_Wtime to rank 0's from the ping-pong with the
// smallest round trip, so that all ranks can start an iteration at one common
// instant. The residual is measured by a second, independent estimate after the
// correction is applied.
#include <mpi.h>

#include "suites/common/mpi.hpp"

namespace sextant::comm {

struct ClockSync {
  double offset = 0;        // global time = MPI_Wtime() + offset (0 on rank 0)
  double residual = 0;      // max over ranks of |remaining offset|, valid on rank 0
  double now() const { return MPI_Wtime() + offset; }
};

ClockSync synchronise_clocks(MPI_Comm comm, WaitMode wait, int rounds = 30);

}  // namespace sextant::comm
