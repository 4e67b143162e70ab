#include "suites/comm/clock.hpp"

#include <cmath>
#include <limits>

namespace sextant::comm {
namespace {

constexpr int tag = 4242;

// Offset of rank q's clock (shifted by `shift`) against rank 0's, estimated on q.
double estimate_offset(MPI_Comm comm, WaitMode mode, int rounds, double shift) {
  int rank = comm_rank(comm), size = comm_size(comm);
  double offset = 0;
  for (int q = 1; q < size; ++q) {
    if (rank == 0) {
      for (int k = 0; k < rounds; ++k) {
        double ping = 0, t0 = 0;
        MPI_Request r;
        SEXTANT_MPI_CHECK(MPI_Irecv(&ping, 1, MPI_DOUBLE, q, tag, comm, &r));
        sextant::wait(r, mode);
        t0 = MPI_Wtime();
        SEXTANT_MPI_CHECK(MPI_Isend(&t0, 1, MPI_DOUBLE, q, tag, comm, &r));
        sextant::wait(r, mode);
      }
    } else if (rank == q) {
      double best_rtt = std::numeric_limits<double>::infinity();
      for (int k = 0; k < rounds; ++k) {
        double s1 = MPI_Wtime() + shift, t0 = 0;
        MPI_Request r;
        SEXTANT_MPI_CHECK(MPI_Isend(&s1, 1, MPI_DOUBLE, 0, tag, comm, &r));
        sextant::wait(r, mode);
        SEXTANT_MPI_CHECK(MPI_Irecv(&t0, 1, MPI_DOUBLE, 0, tag, comm, &r));
        sextant::wait(r, mode);
        double s2 = MPI_Wtime() + shift;
        if (s2 - s1 < best_rtt) {
          best_rtt = s2 - s1;
          offset = t0 - 0.5 * (s1 + s2);
        }
      }
    }
  }
  return offset;
}

}  // namespace

ClockSync synchronise_clocks(MPI_Comm comm, WaitMode wait, int rounds) {
  ClockSync sync;
  sync.offset = estimate_offset(comm, wait, rounds, 0.0);
  double left = std::fabs(estimate_offset(comm, wait, rounds, sync.offset));
  allreduce(MPI_IN_PLACE, &left, 1, MPI_DOUBLE, MPI_MAX, comm, wait);
  sync.residual = left;
  return sync;
}

}  // namespace sextant::comm
