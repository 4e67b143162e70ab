#include <algorithm>
#include <array>
#include <vector>

#include "suites/comm/benchmarks/collectives.hpp"

// Every descriptor, each defined in its own file of benchmarks/.
namespace sextant::comm::benchmarks {
extern const Benchmark pingpong, late_receive, bandwidth, bibandwidth, multi_latency, multi_bandwidth;
extern const Benchmark barrier, bcast, reduce, allreduce, allgather, reduce_scatter, alltoall, gather, scatter,
    reduce_local, scan;
}  // namespace sextant::comm::benchmarks

namespace sextant::comm {
namespace {

// Non-blocking variant of a collective: same descriptor, timed as start + wait.
Benchmark nonblocking(const Benchmark& b, std::string_view name) {
  Benchmark nb = b;
  nb.name = name;
  nb.nonblocking = true;
  return nb;
}

std::vector<Benchmark> build() {
  namespace bm = benchmarks;
  return {bm::pingpong,  bm::late_receive, bm::bandwidth, bm::bibandwidth, bm::multi_latency, bm::multi_bandwidth,
          bm::barrier,   bm::bcast,     bm::reduce,      bm::allreduce,     bm::allgather,
          bm::reduce_scatter, bm::alltoall, bm::gather, bm::scatter, bm::reduce_local, bm::scan,
          nonblocking(bm::allreduce, "iallreduce"), nonblocking(bm::allgather, "iallgather"),
          nonblocking(bm::reduce_scatter, "ireduce_scatter"), nonblocking(bm::alltoall, "ialltoall"),
          nonblocking(bm::bcast, "ibcast")};
}

}  // namespace

std::span<const Benchmark> registry() {
  static const std::vector<Benchmark> all = build();
  return all;
}

const Benchmark* find_benchmark(std::string_view name) {
  auto all = registry();
  auto it = std::find_if(all.begin(), all.end(), [&](const Benchmark& b) { return b.name == name; });
  return it == all.end() ? nullptr : &*it;
}

bool is_nonblocking(const Benchmark& b) { return b.nonblocking; }

namespace detail {

void run_collective(Case& c, void (*blocking)(Case&), void (*start)(Case&, MPI_Request*)) {
  if (c.wait == WaitMode::blocking && !c.nonblocking_form) {
    blocking(c);
    return;
  }
  MPI_Request r;
  start(c, &r);
  wait(r, c.wait);
}

Expectation reduced(const Case& c, std::size_t i, int ranks) {
  if (ranks < 0) ranks = c.size;
  Expectation e{pattern(c.dtype, 0, i), std::abs(pattern(c.dtype, 0, i)), ranks};
  for (int q = 1; q < ranks; ++q) {
    double v = pattern(c.dtype, q, i);
    e.value = apply(c.reduction, e.value, v);
    e.magnitude += std::abs(v);
  }
  return e;
}

}  // namespace detail
}  // namespace sextant::comm
