#include "suites/comm/benchmarks/collectives.hpp"

namespace sextant::comm::benchmarks {
namespace {
void blocking(Case& c) {
  SEXTANT_MPI_CHECK(MPI_Reduce(c.sbuf_or_in_place(c.rank == c.root), c.rbuf(), c.icount(), c.type(),
                               mpi_op(c.reduction, c.dtype), c.root, c.comm));
}
void start(Case& c, MPI_Request* r) {
  SEXTANT_MPI_CHECK(MPI_Ireduce(c.sbuf_or_in_place(c.rank == c.root), c.rbuf(), c.icount(), c.type(),
                                mpi_op(c.reduction, c.dtype), c.root, c.comm, r));
}
}  // namespace

extern const Benchmark reduce{
    .name = "reduce",
    .reduces = true,
    .data_elements = detail::same,
    .busbw_factor = detail::one,
    .send_elements = detail::same,
    .recv_elements = detail::same,
    .run = [](Case& c) { detail::run_collective(c, blocking, start); },
    .start = start,
    .in_place_offset = [](const Case& c) -> std::optional<std::size_t> {
      return c.rank == c.root ? std::optional<std::size_t>(0) : std::nullopt;
    },
    .expect = [](const Case& c, std::size_t i) -> std::optional<Expectation> {
      if (c.rank != c.root) return std::nullopt;
      return detail::reduced(c, i);
    },
    .mpi_function = "MPI_Reduce",
};
}  // namespace sextant::comm::benchmarks
