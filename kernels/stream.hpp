#pragma once
// The STREAM kernels (McCalpin), as in Kokkos' benchmarks/stream and BabelStream:
//   copy  c = a          scale b = q c          add c = a + b
//   triad a = b + q c    dot   sum_i a_i b_i
// Counting follows STREAM: bytes are the arrays named in the kernel, each moved once
// (copy/scale 2 arrays, add/triad 3, dot 2 reads), no write-allocate traffic; FLOPs are
// the arithmetic operations per element (copy 0, scale 1, add 1, triad 2, dot 2).
//
// The *_repeated forms keep one parallel launch for `reps` sweeps over the arrays, each
// thread on its own contiguous chunk (ERT's scheme): the working-set sweep needs that
// to measure cache bandwidth, where one sweep of an L1-sized array lasts less than a
// launch. On a GPU they run correctly but are not the coalesced pattern to tune for.
#include <cstdint>

#include "kernels/common.hpp"
#include "kernels/counts.hpp"

namespace sextant::kernels {

template <class Exec, class VA, class VC>
void stream_copy(const Exec& exec, VC c, VA a) {
  Kokkos::parallel_for(
      "sextant::stream_copy", Kokkos::RangePolicy<Exec>(exec, 0, c.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { c(i) = a(i); });
}

template <class Exec, class VB, class VC>
void stream_scale(const Exec& exec, VB b, VC c, typename VB::non_const_value_type q) {
  Kokkos::parallel_for(
      "sextant::stream_scale", Kokkos::RangePolicy<Exec>(exec, 0, b.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { b(i) = q * c(i); });
}

template <class Exec, class VC, class VA, class VB>
void stream_add(const Exec& exec, VC c, VA a, VB b) {
  Kokkos::parallel_for(
      "sextant::stream_add", Kokkos::RangePolicy<Exec>(exec, 0, c.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { c(i) = a(i) + b(i); });
}

template <class Exec, class VA, class VB, class VC>
void stream_triad(const Exec& exec, VA a, VB b, VC c, typename VA::non_const_value_type q) {
  Kokkos::parallel_for(
      "sextant::stream_triad", Kokkos::RangePolicy<Exec>(exec, 0, a.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { a(i) = b(i) + q * c(i); });
}

// Independent partial sums per thread: a single running sum is a chain of dependent
// adds (the compiler may not reassociate), which caps a core at one add per add-latency.
// Host threads only: on a device, blocks of contiguous elements per thread would make
// neighbouring threads read 8 KiB apart (uncoalesced), so devices reduce per element.
inline constexpr int reduction_lanes = 16;
inline constexpr std::int64_t reduction_block = 1024;  // elements per work item

// sum_{i in [begin, end)} a_i b_i with reduction_lanes independent partial sums.
template <class VA, class VB>
KOKKOS_INLINE_FUNCTION typename VA::non_const_value_type lane_dot(const VA& a, const VB& b,
                                                                  std::int64_t begin,
                                                                  std::int64_t end) {
  using Scalar = typename VA::non_const_value_type;
  Scalar lane[reduction_lanes] = {};
  std::int64_t i = begin;
  for (; i + reduction_lanes <= end; i += reduction_lanes)
    for (int l = 0; l < reduction_lanes; ++l) lane[l] += a(i + l) * b(i + l);
  for (int l = 0; i < end; ++i, ++l) lane[l] += a(i) * b(i);
  Scalar s = 0;
  for (int l = 0; l < reduction_lanes; ++l) s += lane[l];
  return s;
}

// Returns the dot product on the host (the reduction completes before it returns).
template <class Exec, class VA, class VB>
typename VA::non_const_value_type stream_dot(const Exec& exec, VA a, VB b) {
  using Scalar = typename VA::non_const_value_type;
  const std::int64_t n = a.extent(0);
  Scalar sum = 0;
  if constexpr (!runs_on_host<Exec>) {
    // A device thread per element: neighbouring threads read neighbouring elements
    // (coalesced) and the backend's tree reduction breaks the chain instead of lanes.
    Kokkos::parallel_reduce(
        "sextant::stream_dot", Kokkos::RangePolicy<Exec>(exec, 0, n),
        KOKKOS_LAMBDA(const std::int64_t i, Scalar& partial) { partial += a(i) * b(i); }, sum);
    return sum;
  }
  Kokkos::parallel_reduce(
      "sextant::stream_dot", Kokkos::RangePolicy<Exec>(exec, 0, ceil_div(n, reduction_block)),
      KOKKOS_LAMBDA(const std::int64_t block, Scalar& partial) {
        const std::int64_t begin = block * reduction_block;
        const std::int64_t end = begin + reduction_block < n ? begin + reduction_block : n;
        partial += lane_dot(a, b, begin, end);
      },
      sum);
  return sum;
}

// Chunks for the repeated forms: one per unit of concurrency, so that on the host each
// thread's part of the working set stays in its own caches between sweeps.
template <class Exec>
std::int64_t stream_chunks(const Exec& exec, std::int64_t n) {
  std::int64_t chunks = exec.concurrency();
  return chunks < 1 ? 1 : (chunks > n ? (n > 0 ? n : 1) : chunks);
}

// a = b + q c, `reps` times, in one launch.
template <class Exec, class VA, class VB, class VC>
void stream_triad_repeated(const Exec& exec, VA a, VB b, VC c,
                           typename VA::non_const_value_type q, int reps) {
  const std::int64_t n = a.extent(0), chunks = stream_chunks(exec, n);
  Kokkos::parallel_for(
      "sextant::stream_triad_repeated", Kokkos::RangePolicy<Exec>(exec, 0, chunks),
      KOKKOS_LAMBDA(const std::int64_t chunk) {
        const std::int64_t begin = n * chunk / chunks, end = n * (chunk + 1) / chunks;
        for (int r = 0; r < reps; ++r)
          for (std::int64_t i = begin; i < end; ++i) a(i) = b(i) + q * c(i);
      });
}

// sum_i a_i b_i, `reps` times, in one launch; returns reps * dot (on the host).
template <class Exec, class VA, class VB>
typename VA::non_const_value_type stream_dot_repeated(const Exec& exec, VA a, VB b, int reps) {
  using Scalar = typename VA::non_const_value_type;
  const std::int64_t n = a.extent(0), chunks = stream_chunks(exec, n);
  Scalar sum = 0;
  Kokkos::parallel_reduce(
      "sextant::stream_dot_repeated", Kokkos::RangePolicy<Exec>(exec, 0, chunks),
      KOKKOS_LAMBDA(const std::int64_t chunk, Scalar& partial) {
        const std::int64_t begin = n * chunk / chunks, end = n * (chunk + 1) / chunks;
        for (int r = 0; r < reps; ++r) partial += lane_dot(a, b, begin, end);
      },
      sum);
  return sum;
}

}  // namespace sextant::kernels
