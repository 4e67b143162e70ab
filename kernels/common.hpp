#pragma once
// What every kernel shares: View aliases in an execution space's memory, the math
// functions under the name the Kokkos version in use gives them, counter-based random
// fills (the same values on any backend and thread count), and the host/device split of
// tuning constants. Core Kokkos API only, so the kernels build against Kokkos 3.4 to 5.x.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace sextant::kernels {

// Kokkos 3.6 moved the math functions from Kokkos::Experimental to Kokkos; 4.0
// dropped the old names. Kernels call math::exp and friends.
namespace math {
#if KOKKOS_VERSION >= 30700
using Kokkos::exp;
using Kokkos::fabs;
using Kokkos::sqrt;
using Kokkos::tanh;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::sqrt;
using Kokkos::Experimental::tanh;
#endif
}  // namespace math

// Contiguous row-major arrays in the memory of execution space Exec.
template <class Scalar, class Exec>
using View1 = Kokkos::View<Scalar*, Kokkos::LayoutRight, typename Exec::memory_space>;
template <class Scalar, class Exec>
using View2 = Kokkos::View<Scalar**, Kokkos::LayoutRight, typename Exec::memory_space>;
template <class Scalar, class Exec>
using View3 = Kokkos::View<Scalar***, Kokkos::LayoutRight, typename Exec::memory_space>;
template <class Scalar, class Exec>
using View4 = Kokkos::View<Scalar****, Kokkos::LayoutRight, typename Exec::memory_space>;

// Whether Exec runs on the host's cores: tuning constants (register tiles, chain counts)
// differ between CPU threads, which want wide per-thread work, and GPU threads.
template <class Exec>
inline constexpr bool runs_on_host =
    std::is_same_v<typename Exec::memory_space, Kokkos::HostSpace>;

template <class V>
inline constexpr int rank_of = static_cast<int>(V::rank);

// SplitMix64: a counter-based generator, so element i gets the same value whatever
// the backend, thread count or schedule.
KOKKOS_INLINE_FUNCTION std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) with 53 random bits.
KOKKOS_INLINE_FUNCTION double uniform01(std::uint64_t seed, std::uint64_t i) {
  return static_cast<double>(splitmix64(seed * 0x2545F4914F6CDD1Dull + i) >> 11) * 0x1.0p-53;
}

// Fills a contiguous View of any rank with magnitudes uniform in [lo, hi]; with
// random_sign, each element's sign is drawn too. lo > 0 keeps every value non-zero.
template <class Exec, class V>
void fill_uniform(const Exec& exec, V view, std::uint64_t seed, double lo, double hi,
                  bool random_sign = true) {
  using Scalar = typename V::non_const_value_type;
  Kokkos::View<Scalar*, typename V::memory_space, Kokkos::MemoryUnmanaged> flat(view.data(),
                                                                                view.span());
  Kokkos::parallel_for(
      "sextant::fill_uniform", Kokkos::RangePolicy<Exec>(exec, 0, flat.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const double u = uniform01(seed, static_cast<std::uint64_t>(2 * i));
        double v = lo + (hi - lo) * u;
        if (random_sign && uniform01(seed, static_cast<std::uint64_t>(2 * i + 1)) < 0.5) v = -v;
        flat(i) = static_cast<Scalar>(v);
      });
}

// Integer indices uniform in [0, range).
template <class Exec, class V>
void fill_indices(const Exec& exec, V view, std::uint64_t seed, std::int64_t range) {
  using Index = typename V::non_const_value_type;
  Kokkos::parallel_for(
      "sextant::fill_indices", Kokkos::RangePolicy<Exec>(exec, 0, view.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        auto r = static_cast<std::int64_t>(uniform01(seed, static_cast<std::uint64_t>(i)) * range);
        view(i) = static_cast<Index>(r < range ? r : range - 1);
      });
}

KOKKOS_INLINE_FUNCTION constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// Column sums of a rows x cols matrix without atomics, on any backend, in an order that
// does not depend on the thread count. Pass 1: a work item per (chunk of
// column_sum_rows rows, column), consecutive items on consecutive columns (coalesced on
// a GPU), calls term(i, j) for its rows (which may also write element (i, j) of an
// output) and stores the chunk's sum for each of `sums` per-column quantities in
// partial(chunk, s * cols + j). Pass 2: a work item per column adds its chunks in order.
// 32 rows per chunk: 4096 rows give 128 chunks, so even a few hundred columns make tens
// of thousands of work items, and pass 2 reads 1/32 of what pass 1 did.
inline constexpr std::int64_t column_sum_rows = 32;

template <int Sums, class Exec, class Scalar, class Term, class Store>
void column_sums(const Exec& exec, std::int64_t rows, std::int64_t cols, const char* label, Term term,
                 Store store) {
  const std::int64_t chunks = ceil_div(rows, column_sum_rows);
  Kokkos::View<Scalar**, Kokkos::LayoutRight, typename Exec::memory_space> partial(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "sextant::column_sums"), chunks, Sums * cols);
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<Exec>(exec, 0, chunks * cols), KOKKOS_LAMBDA(const std::int64_t item) {
        const std::int64_t chunk = item / cols, j = item % cols;
        const std::int64_t begin = chunk * column_sum_rows;
        const std::int64_t end = begin + column_sum_rows < rows ? begin + column_sum_rows : rows;
        Scalar sum[Sums] = {};
        for (std::int64_t i = begin; i < end; ++i) term(i, j, sum);
        for (int s = 0; s < Sums; ++s) partial(chunk, s * cols + j) = sum[s];
      });
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<Exec>(exec, 0, cols), KOKKOS_LAMBDA(const std::int64_t j) {
        Scalar sum[Sums] = {};
        for (std::int64_t c = 0; c < chunks; ++c)
          for (int s = 0; s < Sums; ++s) sum[s] += partial(c, s * cols + j);
        store(j, sum);
      });
}

}  // namespace sextant::kernels
