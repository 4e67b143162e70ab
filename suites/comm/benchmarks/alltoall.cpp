#include "suites/comm/benchmarks/collectives.hpp"

namespace sextant::comm::benchmarks {
namespace {
void blocking(Case& c) {
  SEXTANT_MPI_CHECK(MPI_Alltoall(c.sbuf_or_in_place(), c.icount(), c.type(), c.rbuf(), c.icount(), c.type(), c.comm));
}
void start(Case& c, MPI_Request* r) {
  SEXTANT_MPI_CHECK(MPI_Ialltoall(c.sbuf_or_in_place(), c.icount(), c.type(), c.rbuf(), c.icount(), c.type(), c.comm, r));
}
}  // namespace

// count = elements sent to each peer.
extern const Benchmark alltoall{
    .name = "alltoall",
    .data_elements = detail::times_p,
    .busbw_factor = detail::p_minus_1_over_p,
    .send_elements = detail::times_p,
    .recv_elements = detail::times_p,
    .run = [](Case& c) { detail::run_collective(c, blocking, start); },
    .start = start,
    .in_place_offset = [](const Case&) -> std::optional<std::size_t> { return 0; },
    .expect = [](const Case& c, std::size_t i) -> std::optional<Expectation> {
      auto from = static_cast<int>(i / c.count);
      return Expectation{pattern(c.dtype, from, c.rank * c.count + i % c.count)};
    },
    .size_unit = SizeUnit::per_rank_block,
    .mpi_function = "MPI_Alltoall",
};
}  // namespace sextant::comm::benchmarks
