#include "suites/comm/benchmarks/collectives.hpp"

namespace sextant::comm::benchmarks {
namespace {
void blocking(Case& c) {
  SEXTANT_MPI_CHECK(MPI_Allgather(c.sbuf_or_in_place(), c.icount(), c.type(), c.rbuf(), c.icount(), c.type(), c.comm));
}
void start(Case& c, MPI_Request* r) {
  SEXTANT_MPI_CHECK(MPI_Iallgather(c.sbuf_or_in_place(), c.icount(), c.type(), c.rbuf(), c.icount(), c.type(), c.comm, r));
}
}  // namespace

extern const Benchmark allgather{
    .name = "allgather",
    .data_elements = detail::times_p,
    .busbw_factor = detail::p_minus_1_over_p,
    .send_elements = detail::same,
    .recv_elements = detail::times_p,
    .run = [](Case& c) { detail::run_collective(c, blocking, start); },
    .start = start,
    .in_place_offset = [](const Case& c) -> std::optional<std::size_t> { return c.rank * c.count; },
    .expect = [](const Case& c, std::size_t i) -> std::optional<Expectation> {
      return Expectation{pattern(c.dtype, static_cast<int>(i / c.count), i % c.count)};
    },
    .size_unit = SizeUnit::per_rank_block,
    .mpi_function = "MPI_Allgather",
};
}  // namespace sextant::comm::benchmarks
