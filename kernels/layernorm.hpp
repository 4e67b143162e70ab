#pragma once
// Layer normalisation over the last dimension (rows x cols), forward and backward:
//   forward  mu_i = mean_j x_ij,  var_i = mean_j (x_ij - mu_i)^2 (two passes, stable),
//            rstd_i = 1 / sqrt(var_i + eps),  y_ij = (x_ij - mu_i) rstd_i gamma_j + beta_j;
//            mu and rstd are saved for the backward pass.
//   backward xhat = (x - mu) rstd, g = dy gamma,
//            dx_ij = rstd_i (g_ij - mean_j g_ij - xhat_ij mean_j (g_ij xhat_ij)),
//            dgamma_j = sum_i dy_ij xhat_ij,  dbeta_j = sum_i dy_ij.
// Host: a work item per row (forward) or per chunk of rows (backward), its row loops on
// contiguous memory, the row sums and passes in explicit vectors (kernels/host_loops.hpp); the
// forward asks for the next row while it works on this one (rows of a few KiB end
// before a hardware prefetcher has learnt them), the backward takes its two row sums in
// one pass over dy, gamma and x, and asks to own the row of dx in it
// (host::prefetch_for_write_along); the backward chunk also adds its rows' dgamma and
// dbeta terms into its own partial row, and the partial rows are summed in chunk order
// (no atomics, thread-count independent; x and dy are read once). Elsewhere (GPUs,
// strided Views): one team per row for the row statistics, and the parameter gradients
// by column_sums (kernels/common.hpp): a work item per chunk of rows and column.
//
// Counted FLOPs per element: forward 8 (sum 1, centre 1, square and sum 2, centre 1,
// scale 1, gamma 1, beta 1); backward 18 (row pass 13: xhat 2, g 1, two sums 3, dx 4,
// recomputed xhat and g 3; column pass 5). Per-row and per-column constants not counted.
// Bytes, compulsory (each array moved once; the column pass's re-read of x and dy is not
// counted): forward 2 rows cols + 2 cols + 2 rows; backward 3 rows cols + 3 cols + 2 rows.
#include <cstdint>
#include <stdexcept>

#include "kernels/common.hpp"
#include "kernels/counts.hpp"
#include "kernels/host_loops.hpp"

namespace sextant::kernels {

template <class Exec, class VX, class VG, class VB, class VY, class VS>
void layernorm_forward(const Exec& exec, VX x, VG gamma, VB beta,
                       typename VY::non_const_value_type eps, VY y, VS mean, VS rstd) {
  using Scalar = typename VY::non_const_value_type;
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
  const std::int64_t rows = x.extent(0), cols = x.extent(1);
  if (std::int64_t(y.extent(0)) != rows || std::int64_t(y.extent(1)) != cols ||
      std::int64_t(gamma.extent(0)) != cols || std::int64_t(beta.extent(0)) != cols ||
      std::int64_t(mean.extent(0)) != rows || std::int64_t(rstd.extent(0)) != rows)
    throw std::invalid_argument("sextant::layernorm_forward: shapes do not match");
  const int n = int(cols);
  if constexpr (runs_on_host<Exec>) {
    if (host::rows_contiguous(x) && host::rows_contiguous(y) && gamma.stride(0) == 1 && beta.stride(0) == 1) {
      const Scalar* g = gamma.data();
      const Scalar* b = beta.data();
      Kokkos::parallel_for(
          "sextant::layernorm_forward", Kokkos::RangePolicy<Exec>(exec, 0, rows), KOKKOS_LAMBDA(const std::int64_t i) {
            const Scalar* xi = host::row(x, i);
            Scalar* yi = host::row(y, i);
            const Scalar* x_next = host::row(x, i + 1 < rows ? i + 1 : i);  // streams in during the second pass
            const Scalar mu = host::sum<Scalar>(cols, [&](auto at) { return at.load(xi); }) / Scalar(n);
            const Scalar sq = host::sum<Scalar>(cols, [&](auto at) {
              host::prefetch_along(at, x_next);
              const auto d = at.load(xi) - mu;
              return d * d;
            });
            const Scalar r = Scalar(1) / math::sqrt(sq / Scalar(n) + eps);
            host::for_each<Scalar>(cols, [&](auto at) { at.store(yi, (at.load(xi) - mu) * r * at.load(g) + at.load(b)); });
            mean(i) = mu;
            rstd(i) = r;
          });
      return;
    }
  }
  Kokkos::parallel_for(
      "sextant::layernorm_forward", Kokkos::TeamPolicy<Exec>(exec, int(rows), Kokkos::AUTO),
      KOKKOS_LAMBDA(const Member& team) {
        const std::int64_t i = team.league_rank();
        Scalar sum;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, n), [&](const int j, Scalar& local) { local += x(i, j); }, sum);
        const Scalar mu = sum / Scalar(n);
        Scalar sq;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, n),
            [&](const int j, Scalar& local) {
              const Scalar d = x(i, j) - mu;
              local += d * d;
            },
            sq);
        const Scalar r = Scalar(1) / math::sqrt(sq / Scalar(n) + eps);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n),
                             [&](const int j) { y(i, j) = (x(i, j) - mu) * r * gamma(j) + beta(j); });
        Kokkos::single(Kokkos::PerTeam(team), [&]() {
          mean(i) = mu;
          rstd(i) = r;
        });
      });
}

template <class Exec, class VDY, class VX, class VG, class VS, class VDX, class VDG>
void layernorm_backward(const Exec& exec, VDY dy, VX x, VG gamma, VS mean, VS rstd, VDX dx,
                        VDG dgamma, VDG dbeta) {
  using Scalar = typename VDX::non_const_value_type;
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
  const std::int64_t rows = x.extent(0), cols = x.extent(1);
  if (std::int64_t(dy.extent(0)) != rows || std::int64_t(dy.extent(1)) != cols ||
      std::int64_t(dx.extent(0)) != rows || std::int64_t(dx.extent(1)) != cols ||
      std::int64_t(gamma.extent(0)) != cols || std::int64_t(mean.extent(0)) != rows ||
      std::int64_t(rstd.extent(0)) != rows || std::int64_t(dgamma.extent(0)) != cols ||
      std::int64_t(dbeta.extent(0)) != cols)
    throw std::invalid_argument("sextant::layernorm_backward: shapes do not match");
  const int n = int(cols);
  if constexpr (runs_on_host<Exec>) {
    if (host::rows_contiguous(dy) && host::rows_contiguous(x) && host::rows_contiguous(dx) && gamma.stride(0) == 1) {
      const std::int64_t chunks = ceil_div(rows, host::rows_per_chunk);
      View2<Scalar, Exec> partial(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "sextant::layernorm_partial"),
                                  chunks, 2 * cols);  // per chunk: dgamma terms, then dbeta terms
      const Scalar* g = gamma.data();
      Kokkos::parallel_for(
          "sextant::layernorm_backward", Kokkos::RangePolicy<Exec>(exec, 0, chunks),
          KOKKOS_LAMBDA(const std::int64_t chunk) {
            Scalar* dg = &partial(chunk, 0);
            Scalar* db = dg + cols;
            for (std::int64_t j = 0; j < 2 * cols; ++j) dg[j] = Scalar(0);
            const std::int64_t end = (chunk + 1) * host::rows_per_chunk < rows ? (chunk + 1) * host::rows_per_chunk : rows;
            for (std::int64_t i = chunk * host::rows_per_chunk; i < end; ++i) {
              const Scalar* dyi = host::row(dy, i);
              const Scalar* xi = host::row(x, i);
              Scalar* dxi = host::row(dx, i);
              const Scalar mu = mean(i), r = rstd(i);
              const auto [sum_g, sum_gx] = host::sum2<Scalar>(cols, [&](auto at) {
                host::prefetch_for_write_along(at, dxi);  // written by the next pass
                const auto gj = at.load(dyi) * at.load(g);
                return std::pair{gj, gj * (at.load(xi) - mu)};
              });
              const Scalar mean_g = sum_g / Scalar(n), mean_gx = sum_gx * r / Scalar(n);
              // The next row's dy and x stream in during this pass, which works from L1.
              const Scalar* dy_next = host::row(dy, i + 1 < rows ? i + 1 : i);
              const Scalar* x_next = host::row(x, i + 1 < rows ? i + 1 : i);
              host::for_each<Scalar>(cols, [&](auto at) {
                host::prefetch_along(at, dy_next);
                host::prefetch_along(at, x_next);
                const auto dyj = at.load(dyi);
                const auto xhat = (at.load(xi) - mu) * r;
                at.store(dxi, r * (dyj * at.load(g) - mean_g - xhat * mean_gx));
                at.store(dg, at.load(dg) + dyj * xhat);
                at.store(db, at.load(db) + dyj);
              });
            }
          });
      host::add_partial_rows(exec, partial, 0, dgamma);
      host::add_partial_rows(exec, partial, cols, dbeta);
      return;
    }
  }
  Kokkos::parallel_for(
      "sextant::layernorm_backward_rows", Kokkos::TeamPolicy<Exec>(exec, int(rows), Kokkos::AUTO),
      KOKKOS_LAMBDA(const Member& team) {
        const std::int64_t i = team.league_rank();
        const Scalar mu = mean(i), r = rstd(i);
        Scalar sum_g, sum_gx;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, n),
            [&](const int j, Scalar& local) { local += dy(i, j) * gamma(j); }, sum_g);
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, n),
            [&](const int j, Scalar& local) { local += dy(i, j) * gamma(j) * (x(i, j) - mu) * r; },
            sum_gx);
        const Scalar mean_g = sum_g / Scalar(n), mean_gx = sum_gx / Scalar(n);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int j) {
          const Scalar xhat = (x(i, j) - mu) * r;
          dx(i, j) = r * (dy(i, j) * gamma(j) - mean_g - xhat * mean_gx);
        });
      });
  column_sums<2, Exec, Scalar>(
      exec, rows, cols, "sextant::layernorm_backward_params",
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j, Scalar* sum) {
        const Scalar g = dy(i, j);
        sum[0] += g * (x(i, j) - mean(i)) * rstd(i);
        sum[1] += g;
      },
      KOKKOS_LAMBDA(const std::int64_t j, const Scalar* sum) {
        dgamma(j) = sum[0];
        dbeta(j) = sum[1];
      });
}

}  // namespace sextant::kernels
