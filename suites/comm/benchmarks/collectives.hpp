#pragma once
// Declarations of the descriptors registry.cpp lists; each lives in its own file.
#include "suites/comm/benchmark.hpp"

namespace sextant::comm::benchmarks {
extern const Benchmark pingpong, bandwidth, bibandwidth, multi_latency, multi_bandwidth;
extern const Benchmark barrier, bcast, reduce, allreduce, allgather, reduce_scatter, alltoall,
    gather, scatter, reduce_local;
}  // namespace sextant::comm::benchmarks
