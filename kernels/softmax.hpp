#pragma once
// Row-wise softmax, numerically stable (the row maximum is subtracted before exp):
//   forward  y_ij = exp(x_ij - m_i) / sum_k exp(x_ik - m_i),  m_i = max_k x_ik
//   backward dx_ij = y_ij (dy_ij - sum_k y_ik dy_ik)
// Host: a work item per row, the row's passes over contiguous memory in explicit vectors
// (kernels/host_loops.hpp): the max, the exponentials with their sum, the scaling.
// Elsewhere (GPUs, strided Views): one team per row; the team's threads share the row
// through nested reductions. Both directions may run in place (y aliasing x, dx
// aliasing dy): every pass reads an element before anything writes it, and the passes
// are separated by the reductions.
//
// Counted FLOPs per element (exp counted as 1): forward 5 (max, subtract, exp, sum,
// scale), backward 4 (product and sum for the dot, subtract, multiply).
// Bytes, each array moved once: forward 2 rows cols (x read, y written); backward
// 3 rows cols (y, dy read; dx written).
#include <cstdint>
#include <stdexcept>

#include "kernels/common.hpp"
#include "kernels/counts.hpp"
#include "kernels/fast_math.hpp"
#include "kernels/host_loops.hpp"

namespace sextant::kernels {

template <class Exec, class VX, class VY>
void softmax_forward(const Exec& exec, VX x, VY y) {
  using Scalar = typename VY::non_const_value_type;
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
  if (x.extent(0) != y.extent(0) || x.extent(1) != y.extent(1))
    throw std::invalid_argument("sextant::softmax_forward: shapes do not match");
  const int cols = int(x.extent(1));
  if constexpr (runs_on_host<Exec>) {
    if (host::rows_contiguous(x) && host::rows_contiguous(y)) {
      Kokkos::parallel_for(
          "sextant::softmax_forward", Kokkos::RangePolicy<Exec>(exec, 0, x.extent(0)),
          KOKKOS_LAMBDA(const std::int64_t i) {
            const Scalar* xi = host::row(x, i);
            Scalar* yi = host::row(y, i);  // may be xi: each pass reads an element before writing it
            // The next row streams in during the exponentials, which work from L1: its max
            // pass would otherwise wait on memory at every row's start.
            const Scalar* x_next = host::row(x, i + 1 < std::int64_t(x.extent(0)) ? i + 1 : i);
            const Scalar m = host::reduce<Scalar>(cols, xi[0], [&](auto at) { return at.load(xi); }, host::Max{});
            const Scalar sum = host::sum<Scalar>(cols, [&](auto at) {
              host::prefetch_along(at, x_next);
              const auto e = fast::exp_nonpositive(at.load(xi) - m);
              at.store(yi, e);
              return e;
            });
            const Scalar inv = Scalar(1) / sum;
            host::for_each<Scalar>(cols, [&](auto at) { at.store(yi, at.load(yi) * inv); });
          });
      return;
    }
  }
  Kokkos::parallel_for(
      "sextant::softmax_forward", Kokkos::TeamPolicy<Exec>(exec, int(x.extent(0)), Kokkos::AUTO),
      KOKKOS_LAMBDA(const Member& team) {
        const std::int64_t i = team.league_rank();
        Scalar m;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, cols),
            [&](const int j, Scalar& local) { local = x(i, j) > local ? Scalar(x(i, j)) : local; },
            Kokkos::Max<Scalar>(m));
        Scalar sum;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, cols),
            [&](const int j, Scalar& local) {
              const Scalar e = fast::exp_nonpositive(Scalar(x(i, j) - m));
              y(i, j) = e;
              local += e;
            },
            sum);
        const Scalar inv = Scalar(1) / sum;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols), [&](const int j) { y(i, j) *= inv; });
      });
}

template <class Exec, class VY, class VDY, class VDX>
void softmax_backward(const Exec& exec, VY y, VDY dy, VDX dx) {
  using Scalar = typename VDX::non_const_value_type;
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
  if (y.extent(0) != dy.extent(0) || y.extent(1) != dy.extent(1) || y.extent(0) != dx.extent(0) ||
      y.extent(1) != dx.extent(1))
    throw std::invalid_argument("sextant::softmax_backward: shapes do not match");
  const int cols = int(y.extent(1));
  if constexpr (runs_on_host<Exec>) {
    if (host::rows_contiguous(y) && host::rows_contiguous(dy) && host::rows_contiguous(dx)) {
      Kokkos::parallel_for(
          "sextant::softmax_backward", Kokkos::RangePolicy<Exec>(exec, 0, y.extent(0)),
          KOKKOS_LAMBDA(const std::int64_t i) {
            const Scalar* yi = host::row(y, i);
            const Scalar* dyi = host::row(dy, i);
            Scalar* dxi = host::row(dx, i);  // may be dyi
            const Scalar dot = host::sum<Scalar>(cols, [&](auto at) { return at.load(yi) * at.load(dyi); });
            host::for_each<Scalar>(cols, [&](auto at) { at.store(dxi, at.load(yi) * (at.load(dyi) - dot)); });
          });
      return;
    }
  }
  Kokkos::parallel_for(
      "sextant::softmax_backward", Kokkos::TeamPolicy<Exec>(exec, int(y.extent(0)), Kokkos::AUTO),
      KOKKOS_LAMBDA(const Member& team) {
        const std::int64_t i = team.league_rank();
        Scalar dot;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, cols),
            [&](const int j, Scalar& local) { local += y(i, j) * dy(i, j); }, dot);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols),
                             [&](const int j) { dx(i, j) = y(i, j) * (dy(i, j) - dot); });
      });
}

}  // namespace sextant::kernels
