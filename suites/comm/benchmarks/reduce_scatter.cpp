#include "suites/comm/benchmarks/collectives.hpp"

namespace sextant::comm::benchmarks {
namespace {
void blocking(Case& c) {
  SEXTANT_MPI_CHECK(MPI_Reduce_scatter_block(c.sbuf_or_in_place(), c.rbuf(), c.icount(), c.type(),
                                             mpi_op(c.reduction, c.dtype), c.comm));
}
void start(Case& c, MPI_Request* r) {
  SEXTANT_MPI_CHECK(MPI_Ireduce_scatter_block(c.sbuf_or_in_place(), c.rbuf(), c.icount(), c.type(),
                                              mpi_op(c.reduction, c.dtype), c.comm, r));
}
}  // namespace

// count = elements of the block each rank receives; the input is count * p.
extern const Benchmark reduce_scatter{
    .name = "reduce_scatter",
    .reduces = true,
    .data_elements = detail::times_p,
    .busbw_factor = detail::p_minus_1_over_p,
    .send_elements = detail::times_p,
    .recv_elements = detail::times_p,  // room for the in-place input
    .run = [](Case& c) { detail::run_collective(c, blocking, start); },
    .start = start,
    .in_place_offset = [](const Case&) -> std::optional<std::size_t> { return 0; },
    .expect = [](const Case& c, std::size_t i) -> std::optional<Expectation> {
      if (i >= c.count) return std::nullopt;
      return detail::reduced(c, c.rank * c.count + i);
    },
    .size_unit = SizeUnit::per_rank_block,
    .mpi_function = "MPI_Reduce_scatter_block",
};
}  // namespace sextant::comm::benchmarks
