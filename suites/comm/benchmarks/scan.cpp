#include "suites/comm/benchmarks/collectives.hpp"

namespace sextant::comm::benchmarks {
namespace {
void blocking(Case& c) {
  SEXTANT_MPI_CHECK(MPI_Scan(c.sbuf_or_in_place(), c.rbuf(), c.icount(), c.type(), mpi_op(c.reduction, c.dtype), c.comm));
}
void start(Case& c, MPI_Request* r) {
  SEXTANT_MPI_CHECK(MPI_Iscan(c.sbuf_or_in_place(), c.rbuf(), c.icount(), c.type(), mpi_op(c.reduction, c.dtype), c.comm, r));
}
}  // namespace

// Inclusive prefix reduction: rank r receives the reduction over ranks 0..r. No bus
// bandwidth convention exists for it (nccl-tests has no scan): busbw = algbw.
extern const Benchmark scan{
    .name = "scan",
    .reduces = true,
    .data_elements = detail::same,
    .busbw_factor = detail::one,
    .send_elements = detail::same,
    .recv_elements = detail::same,
    .run = [](Case& c) { detail::run_collective(c, blocking, start); },
    .start = start,
    .in_place_offset = [](const Case&) -> std::optional<std::size_t> { return 0; },
    .expect = [](const Case& c, std::size_t i) -> std::optional<Expectation> {
      return detail::reduced(c, i, c.rank + 1);
    },
    .mpi_function = "MPI_Scan",
};
}  // namespace sextant::comm::benchmarks
