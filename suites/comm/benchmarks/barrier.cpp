#include "suites/comm/benchmarks/collectives.hpp"

namespace sextant::comm::benchmarks {
namespace {
std::size_t none(std::size_t, int) { return 0; }
}  // namespace

// Measured once per level (size 0); nothing to validate.
extern const Benchmark barrier{
    .name = "barrier",
    .typed = false,
    .data_elements = none,
    .busbw_factor = detail::one,
    .send_elements = none,
    .recv_elements = none,
    .run = [](Case& c) { ::sextant::barrier(c.comm, c.wait); },
    .sized = false,
};
}  // namespace sextant::comm::benchmarks
