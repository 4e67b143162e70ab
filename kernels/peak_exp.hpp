#pragma once
// The exp rate: how many exponentials per second the kernels' own exp (kernels/
// fast_math.hpp) reaches on this machine when nothing else bounds it. GELU and softmax
// spend ~20 vector operations on each exp and count it as one FLOP, so FLOPs at the FMA
// peak are no roof for them: a roofline charges their exponentials at this rate instead
// (KernelInfo::exps counts them per call).
//
// Every row of y (L1-sized: a work item's row stays in its core's L1 across the
// repetitions) goes through y <- e^-y `reps` times: a chain per element, the elements of
// a row independent, so the core overlaps as many exps as it has room for. From y in
// (0, 1] the values stay in [e^-1, 1] (they approach y = e^-y's fixed point, 0.567...).
// The host runs a row in its explicit vectors, as the row kernels do (host::for_each);
// a device runs a thread per element.
//
// Counted: rows x cols x reps exponentials.
#include <cstdint>

#include "kernels/common.hpp"
#include "kernels/fast_math.hpp"
#include "kernels/host_loops.hpp"

namespace sextant::kernels {

inline constexpr double peak_exp_count(double rows, double cols, double reps) { return rows * cols * reps; }

template <class Exec, class VY>
void peak_exp(const Exec& exec, VY y, int reps) {
  using Scalar = typename VY::non_const_value_type;
  const std::int64_t cols = std::int64_t(y.extent(1));
  if constexpr (runs_on_host<Exec>) {
    if (host::rows_contiguous(y)) {
      Kokkos::parallel_for(
          "sextant::peak_exp", Kokkos::RangePolicy<Exec>(exec, 0, y.extent(0)), KOKKOS_LAMBDA(const std::int64_t i) {
            Scalar* yi = host::row(y, i);
            for (int r = 0; r < reps; ++r)
              host::for_each<Scalar>(cols, [&](auto at) { at.store(yi, fast::exp_nonpositive(-at.load(yi))); });
          });
      return;
    }
  }
  Kokkos::parallel_for(
      "sextant::peak_exp",
      Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>(exec, {0, 0}, {std::int64_t(y.extent(0)), cols}),
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j) {
        Scalar v = y(i, j);
        for (int r = 0; r < reps; ++r) v = fast::exp_nonpositive(-v);
        y(i, j) = v;
      });
}

}  // namespace sextant::kernels
