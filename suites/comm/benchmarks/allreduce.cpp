#include "suites/comm/benchmarks/collectives.hpp"

namespace sextant::comm::benchmarks {
namespace {
void blocking(Case& c) {
  SEXTANT_MPI_CHECK(MPI_Allreduce(c.sbuf_or_in_place(), c.rbuf(), c.icount(), c.type(), mpi_op(c.reduction, c.dtype), c.comm));
}
void start(Case& c, MPI_Request* r) {
  SEXTANT_MPI_CHECK(MPI_Iallreduce(c.sbuf_or_in_place(), c.rbuf(), c.icount(), c.type(), mpi_op(c.reduction, c.dtype), c.comm, r));
}
}  // namespace

extern const Benchmark allreduce{
    .name = "allreduce",
    .reduces = true,
    .data_elements = detail::same,
    .busbw_factor = detail::two_p_minus_1_over_p,
    .send_elements = detail::same,
    .recv_elements = detail::same,
    .run = [](Case& c) { detail::run_collective(c, blocking, start); },
    .start = start,
    .in_place_offset = [](const Case&) -> std::optional<std::size_t> { return 0; },
    .expect = [](const Case& c, std::size_t i) -> std::optional<Expectation> { return detail::reduced(c, i); },
    .mpi_function = "MPI_Allreduce",
};
}  // namespace sextant::comm::benchmarks
