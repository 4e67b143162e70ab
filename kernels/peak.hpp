#pragma once
// Peak floating-point rate: each work item runs `chains` independent multiply-add
// recurrences x <- x * a + b for `reps` steps (ERT's kernel shape). Independence is
// what fills the pipelines: a core needs (FMA pipes x FMA latency) vector FMAs in
// flight, a number the ISA does not tell (2 x 4 on most x86 cores, more on others),
// and past the register file's size the accumulators spill. So the chain count is a
// parameter, `vectors` accumulators of one vector register each (chains = vectors x
// the ISA's lanes, kernels/isa.hpp; a GPU thread's "vector" is one scalar, its
// warp-mates supply the rest), and the suite sweeps it and keeps the fastest. With
// a < 1 the recurrence contracts to b / (1 - a), so values stay normal.
//
// Counted: 2 FLOPs per multiply-add (chains * reps * items * 2). Bytes: the one result
// per work item written (negligible; the kernel is compute-bound by construction).
// Compiled with contraction allowed (GCC's default for C++), x * a + b is one FMA.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/isa.hpp"

namespace sextant::kernels {

// Accumulator counts the kernel is compiled for; peak_vector_counts picks those worth
// sweeping on a backend.
inline constexpr int peak_vector_candidates[] = {1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32};

// Host: from 4 vectors (one pipe's latency) up to the register file; GPU: 1 to 8
// scalars per thread.
template <class Exec>
std::vector<int> peak_vector_counts() {
  std::vector<int> out;
  for (int v : peak_vector_candidates)
    if (runs_on_host<Exec> ? v >= 4 && v <= isa::vector_registers : v <= 8) out.push_back(v);
  return out;
}

template <class Exec, class Scalar>
inline constexpr int peak_lanes = runs_on_host<Exec> ? isa::lanes<Scalar> : 1;

// The recurrence's constants and starting values, shared with the reference.
struct PeakConstants {
  static constexpr double a = 0.999;
  static constexpr double b = 0.001;
  KOKKOS_INLINE_FUNCTION static double start(std::int64_t item, int chain) {
    return 0.5 + 0.0078125 * chain + 0.001 * static_cast<double>(item % 61);
  }
};

template <class Exec, class Scalar>
inline constexpr int peak_chains(int vectors) {
  return vectors * peak_lanes<Exec, Scalar>;
}

template <class Exec, class Scalar>
inline constexpr double peak_flops(double items, double reps, int vectors) {
  return 2.0 * peak_chains<Exec, Scalar>(vectors) * reps * items;
}

namespace detail {

// out(i) = sum over chains of the chain's value after `reps` steps.
template <int Chains, class Exec, class VOut>
void peak_fma_chains(const Exec& exec, VOut out, int reps) {
  using Scalar = typename VOut::non_const_value_type;
  Kokkos::parallel_for(
      "sextant::peak_fma", Kokkos::RangePolicy<Exec>(exec, 0, out.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t item) {
        const Scalar a = static_cast<Scalar>(static_cast<float>(PeakConstants::a));
        const Scalar b = static_cast<Scalar>(static_cast<float>(PeakConstants::b));
        Scalar x[Chains];
        for (int j = 0; j < Chains; ++j)
          x[j] = static_cast<Scalar>(static_cast<float>(PeakConstants::start(item, j)));
        for (int r = 0; r < reps; ++r)
          for (int j = 0; j < Chains; ++j) x[j] = x[j] * a + b;
        Scalar sum = static_cast<Scalar>(0.0f);
        for (int j = 0; j < Chains; ++j) sum += x[j];
        out(item) = sum;
      });
}

template <class Exec, class VOut, std::size_t... I>
bool peak_fma_dispatch(const Exec& exec, VOut out, int reps, int vectors, std::index_sequence<I...>) {
  using Scalar = typename VOut::non_const_value_type;
  constexpr int lanes = peak_lanes<Exec, Scalar>;
  return ((vectors == peak_vector_candidates[I]
               ? (peak_fma_chains<peak_vector_candidates[I] * lanes>(exec, out, reps), true)
               : false) ||
          ...);
}

}  // namespace detail

// Runs the recurrences with `vectors` accumulators per work item (one of
// peak_vector_candidates).
template <class Exec, class VOut>
void peak_fma(const Exec& exec, VOut out, int reps, int vectors) {
  constexpr std::size_t n = sizeof(peak_vector_candidates) / sizeof(peak_vector_candidates[0]);
  if (!detail::peak_fma_dispatch(exec, out, reps, vectors, std::make_index_sequence<n>{}))
    throw std::invalid_argument("peak_fma: vectors=" + std::to_string(vectors) +
                                " is not one of the accumulator counts it is compiled for");
}

}  // namespace sextant::kernels
