#include "suites/comm/benchmarks/collectives.hpp"

namespace sextant::comm::benchmarks {
namespace {
// The root broadcasts from its send buffer, the others receive into theirs.
void* buffer(Case& c) { return c.rank == c.root ? c.sbuf() : c.rbuf(); }
void blocking(Case& c) { SEXTANT_MPI_CHECK(MPI_Bcast(buffer(c), c.icount(), c.type(), c.root, c.comm)); }
void start(Case& c, MPI_Request* r) {
  SEXTANT_MPI_CHECK(MPI_Ibcast(buffer(c), c.icount(), c.type(), c.root, c.comm, r));
}
}  // namespace

extern const Benchmark bcast{
    .name = "bcast",
    .data_elements = detail::same,
    .busbw_factor = detail::one,
    .send_elements = detail::same,
    .recv_elements = detail::same,
    .run = [](Case& c) { detail::run_collective(c, blocking, start); },
    .start = start,
    .expect = [](const Case& c, std::size_t i) -> std::optional<Expectation> {
      if (c.rank == c.root) return std::nullopt;
      return Expectation{pattern(c.dtype, c.root, i)};
    },
    .mpi_function = "MPI_Bcast",
};
}  // namespace sextant::comm::benchmarks
