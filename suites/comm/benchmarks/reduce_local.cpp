#include "suites/comm/benchmarks/collectives.hpp"

namespace sextant::comm::benchmarks {

// MPI_Reduce_local: the MPI library's own local reduction, no communication. Its
// time per byte is the gamma of the collective cost models. Every rank runs it at
// once (as the ranks of a collective would).
extern const Benchmark reduce_local{
    .name = "reduce_local",
    .reduces = true,
    .data_elements = detail::same,
    .busbw_factor = detail::one,
    .send_elements = detail::same,
    .recv_elements = detail::same,
    .run = [](Case& c) {
      SEXTANT_MPI_CHECK(MPI_Reduce_local(c.sbuf(), c.rbuf(), c.icount(), c.type(), mpi_op(c.reduction, c.dtype)));
    },
    .expect = [](const Case& c, std::size_t i) -> std::optional<Expectation> {
      double a = pattern(c.dtype, c.rank + 1, i), b = pattern(c.dtype, c.rank, i);
      return Expectation{apply(c.reduction, a, b), std::abs(a) + std::abs(b), 2};
    },
    .initial_recv = [](const Case& c, std::size_t i) { return pattern(c.dtype, c.rank + 1, i); },
};

}  // namespace sextant::comm::benchmarks
