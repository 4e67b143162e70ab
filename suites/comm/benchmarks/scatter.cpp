#include "suites/comm/benchmarks/collectives.hpp"

namespace sextant::comm::benchmarks {
namespace {
void blocking(Case& c) {
  SEXTANT_MPI_CHECK(MPI_Scatter(c.sbuf(), c.icount(), c.type(), c.rbuf(), c.icount(), c.type(), c.root, c.comm));
}
void start(Case& c, MPI_Request* r) {
  SEXTANT_MPI_CHECK(MPI_Iscatter(c.sbuf(), c.icount(), c.type(), c.rbuf(), c.icount(), c.type(), c.root, c.comm, r));
}
}  // namespace

// The root's send buffer holds count elements for each rank, in rank order.
extern const Benchmark scatter{
    .name = "scatter",
    .data_elements = detail::times_p,
    .busbw_factor = detail::p_minus_1_over_p,
    .send_elements = detail::times_p,
    .recv_elements = detail::same,
    .run = [](Case& c) { detail::run_collective(c, blocking, start); },
    .start = start,
    .expect = [](const Case& c, std::size_t i) -> std::optional<Expectation> {
      return Expectation{pattern(c.dtype, c.root, c.rank * c.count + i)};
    },
    .size_unit = SizeUnit::per_rank_block,
    .mpi_function = "MPI_Scatter",
};
}  // namespace sextant::comm::benchmarks
