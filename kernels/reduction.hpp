#pragma once
// Sum of a vector, with independent partial sums per work item (see stream.hpp's
// lane_dot) so that a core's adds are not one dependent chain.
// Counted: n FLOPs (one add per element); n s bytes read.
#include <cstdint>

#include "kernels/common.hpp"
#include "kernels/counts.hpp"
#include "kernels/stream.hpp"

namespace sextant::kernels {

// Returns the sum on the host (the reduction completes before it returns).
template <class Exec, class VX>
typename VX::non_const_value_type reduce_sum(const Exec& exec, VX x) {
  using Scalar = typename VX::non_const_value_type;
  const std::int64_t n = x.extent(0);
  Scalar sum = 0;
  if constexpr (!runs_on_host<Exec>) {  // per element on devices (see stream.hpp)
    Kokkos::parallel_reduce(
        "sextant::reduce_sum", Kokkos::RangePolicy<Exec>(exec, 0, n),
        KOKKOS_LAMBDA(const std::int64_t i, Scalar& partial) { partial += x(i); }, sum);
    return sum;
  }
  Kokkos::parallel_reduce(
      "sextant::reduce_sum", Kokkos::RangePolicy<Exec>(exec, 0, ceil_div(n, reduction_block)),
      KOKKOS_LAMBDA(const std::int64_t block, Scalar& partial) {
        const std::int64_t begin = block * reduction_block;
        const std::int64_t end = begin + reduction_block < n ? begin + reduction_block : n;
        Scalar lane[reduction_lanes] = {};
        std::int64_t i = begin;
        for (; i + reduction_lanes <= end; i += reduction_lanes)
          for (int l = 0; l < reduction_lanes; ++l) lane[l] += x(i + l);
        for (int l = 0; i < end; ++i, ++l) lane[l] += x(i);
        Scalar s = 0;
        for (int l = 0; l < reduction_lanes; ++l) s += lane[l];
        partial += s;
      },
      sum);
  return sum;
}

}  // namespace sextant::kernels
