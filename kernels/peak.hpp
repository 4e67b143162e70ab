#pragma once
// Peak floating-point rate: each work item runs `chains` independent multiply-add
// recurrences x <- x * a + b for `reps` steps (ERT's kernel shape). Independence is
// what fills the pipelines: a core with 2 FMA units of latency 4 needs >= 8 vector
// FMAs in flight, so a host thread gets 1 KiB of accumulators (128 float64, 256
// float32: 16 registers of 512 bits); a GPU thread needs few, its warp-mates supply
// the rest. With a < 1 the recurrence contracts to b / (1 - a), so values stay normal.
//
// Counted: 2 FLOPs per multiply-add (chains * reps * items * 2). Bytes: the one result
// per work item written (negligible; the kernel is compute-bound by construction).
// Compiled with contraction allowed (GCC's default for C++), x * a + b is one FMA.
#include <cstdint>

#include "kernels/common.hpp"

namespace sextant::kernels {

template <class Exec, class Scalar>
struct PeakTraits {
  static constexpr int chains = runs_on_host<Exec> ? int(1024 / sizeof(Scalar)) : 8;
};

// The recurrence's constants and starting values, shared with the reference.
struct PeakConstants {
  static constexpr double a = 0.999;
  static constexpr double b = 0.001;
  KOKKOS_INLINE_FUNCTION static double start(std::int64_t item, int chain) {
    return 0.5 + 0.0078125 * chain + 0.001 * static_cast<double>(item % 61);
  }
};

template <class Exec, class Scalar>
inline constexpr double peak_flops(double items, double reps) {
  return 2.0 * PeakTraits<Exec, Scalar>::chains * reps * items;
}

// out(i) = sum over chains of the chain's value after `reps` steps.
template <class Exec, class VOut>
void peak_fma(const Exec& exec, VOut out, int reps) {
  using Scalar = typename VOut::non_const_value_type;
  constexpr int chains = PeakTraits<Exec, Scalar>::chains;
  Kokkos::parallel_for(
      "sextant::peak_fma", Kokkos::RangePolicy<Exec>(exec, 0, out.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t item) {
        const Scalar a = static_cast<Scalar>(static_cast<float>(PeakConstants::a));
        const Scalar b = static_cast<Scalar>(static_cast<float>(PeakConstants::b));
        Scalar x[chains];
        for (int j = 0; j < chains; ++j)
          x[j] = static_cast<Scalar>(static_cast<float>(PeakConstants::start(item, j)));
        for (int r = 0; r < reps; ++r)
          for (int j = 0; j < chains; ++j) x[j] = x[j] * a + b;
        Scalar sum = static_cast<Scalar>(0.0f);
        for (int j = 0; j < chains; ++j) sum += x[j];
        out(item) = sum;
      });
}

}  // namespace sextant::kernels
