#pragma once
// Element-wise activations of a transformer's MLP, forward and backward.
//
// bias + GELU (tanh form, as GPT-2 and Megatron use it), on rows x cols with a bias per
// column:  z = x + b_j,  y = 0.5 z (1 + tanh(u)),  u = sqrt(2/pi) (z + 0.044715 z^3)
// backward: dx = dy * gelu'(z), db_j = sum_i dx_ij, where
//   gelu'(z) = 0.5 (1 + t) + 0.5 z (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 z^2),  t = tanh(u).
// ReLU on n elements: y = max(x, 0); backward dx = dy where x > 0, else 0.
//
// Counted FLOPs per element, by the tanh form above (tanh counted as 1, a comparison as 1;
// the kernel evaluates the equivalent sigmoid form, see Gelu):
//   bias_gelu forward 10 (add 1, z^3 2, polynomial 2, scale 1, tanh 1, 1 + t 1, 0.5 z 1, product 1)
//   bias_gelu backward 22 (z 1, z^2 1, u 3, tanh 1, 1 + t 1, 1 - t^2 2, 1 + 3a z^2 2,
//                          products and sums 9, times dy 1, bias-gradient sum 1)
//   relu forward 1, relu backward 1.
// Bytes: each array named in the signature moved once (no write-allocate):
//   bias_gelu forward (2 rows cols + cols), backward (3 rows cols + 2 cols),
//   relu forward 2 n, relu backward 3 n.
//
// bias_gelu_backward computes dx and db in one pass over dy and x. Host: a work item per
// chunk of rows (host::rows_per_chunk) adds its rows' dx into its own partial row of db,
// and the partial rows are summed in chunk order. Elsewhere (GPUs, strided Views):
// column_sums (kernels/common.hpp), a work item per chunk of rows and column. Neither
// needs atomics, and the sums do not depend on the thread count.
#include <cstdint>
#include <stdexcept>

#include "kernels/common.hpp"
#include "kernels/counts.hpp"
#include "kernels/fast_math.hpp"
#include "kernels/host_loops.hpp"

namespace sextant::kernels {

// Evaluated as gelu(z) = z sigmoid(2u) = z / (1 + e^-2u), since 0.5 (1 + tanh(u)) =
// sigmoid(2u): one exponential instead of a tanh (no cancellation in 1 + tanh), in base
// 2 with sqrt(2/pi), the cubic's coefficient, -2 and log2 e folded into two constants:
//   e^-2u = 2^v,  v = z (fold_linear + fold_cubic z^2),
// and that 2^v in plain arithmetic (kernels/fast_math.hpp), so that the loops vectorise.
// The roundings of v cost e^-2u a relative error of ~3 ulp times |2u|, within what the
// serial reference allows for the argument of its tanh. Forward and derivative take a
// scalar or a host vector (V) alike.
struct Gelu {
  static constexpr double sqrt_2_over_pi = 0.7978845608028654;
  static constexpr double cubic = 0.044715;
  static constexpr double fold_linear = -2 * sqrt_2_over_pi * 1.4426950408889634074;  // -2 sqrt(2/pi) log2 e
  static constexpr double fold_cubic = fold_linear * cubic;

  // Beyond +-saturation, gelu' is 1 or 0 in the working precision (e^-2u is below
  // 2^-95 resp. above 2^95), and 2^v's argument stays in exp2's range for |z| below it.
  template <class Scalar>
  static constexpr Scalar saturation = sizeof(Scalar) <= 4 ? Scalar(9) : Scalar(20);

  // In place on N values in lockstep (fast_math.hpp), z -> gelu(z).
  template <int N, class V>
  KOKKOS_INLINE_FUNCTION static void forwards(V (&z)[N]) {
    using Scalar = fast::element_t<V>;
    V e[N];
    SEXTANT_LOCKSTEP for (int n = 0; n < N; ++n) e[n] = z[n] * (z[n] * z[n] * Scalar(fold_cubic) + Scalar(fold_linear));
    fast::lockstep::exp2(e);
    SEXTANT_LOCKSTEP for (int n = 0; n < N; ++n) z[n] = z[n] / (Scalar(1) + e[n]);
  }
  template <class V>
  KOKKOS_INLINE_FUNCTION static V forward(V z) {
    V z1[1] = {z};
    forwards(z1);
    return z1[0];
  }

  // gelu'(z) = s + 2 z s (1 - s) u'(z), s = sigmoid(2u) = 1 / (1 + e), 1 - s = e s,
  // u' = sqrt(2/pi) (1 + 3a z^2); written s (1 + w (s e)) with w = 2 z u' (one FMA and a
  // product from z^2): 12 vector operations besides the exp and the divide (a
  // reciprocal estimate with Newton steps measured slower than the divide). z is
  // clamped to +-saturation first: beyond, z^2 and w would overflow (inf times s e = 0
  // is NaN) while gelu' no longer changes.
  // In place on N values in lockstep (fast_math.hpp), z -> gelu'(z).
  template <int N, class V>
  KOKKOS_INLINE_FUNCTION static void derivatives(V (&z)[N]) {
    using Scalar = fast::element_t<V>;
    constexpr Scalar limit = saturation<Scalar>;
    V z2[N], e[N];
    SEXTANT_LOCKSTEP for (int n = 0; n < N; ++n) {
      z[n] = z[n] < -limit ? -limit : z[n];
      z[n] = z[n] > limit ? limit : z[n];
      z2[n] = z[n] * z[n];
      e[n] = z[n] * (z2[n] * Scalar(fold_cubic) + Scalar(fold_linear));
    }
    fast::lockstep::exp2_within_range(e);
    SEXTANT_LOCKSTEP for (int n = 0; n < N; ++n) {
      const V s = Scalar(1) / (Scalar(1) + e[n]);
      const V w = z[n] * (z2[n] * Scalar(2 * sqrt_2_over_pi * 3 * cubic) + Scalar(2 * sqrt_2_over_pi));
      z[n] = s * (Scalar(1) + w * (s * e[n]));
    }
  }
  template <class V>
  KOKKOS_INLINE_FUNCTION static V derivative(V z) {
    V z1[1] = {z};
    derivatives(z1);
    return z1[0];
  }
};

// Host rows go through GELU and its derivative in lockstep over this many vectors:
// side by side with 1, 2 and 3, 4 ran the derivative fastest on AVX2 (16 registers) and
// AVX-512 (32) alike, float32 and float64.
inline constexpr int gelu_lockstep = 4;

// x + bias over a host block (host::BlockAt) of a row: its vectors, for Gelu's lockstep forms.
template <class At, class Scalar>
inline auto biased(At at, const Scalar* x, const Scalar* bias) {
  struct {
    typename At::value_type v[At::count];
  } z;
  SEXTANT_LOCKSTEP for (int k = 0; k < At::count; ++k) z.v[k] = at.load(x, k) + at.load(bias, k);
  return z;
}

// y = gelu(x + bias) with bias broadcast along rows. Host: a work item per row, its
// columns in a contiguous loop that vectorises; a GPU: a thread per element.
template <class Exec, class VX, class VB, class VY>
void bias_gelu_forward(const Exec& exec, VX x, VB bias, VY y) {
  using Scalar = typename VY::non_const_value_type;
  if (y.extent(0) != x.extent(0) || y.extent(1) != x.extent(1) || bias.extent(0) != x.extent(1))
    throw std::invalid_argument("sextant::bias_gelu_forward: shapes do not match");
  const std::int64_t rows = x.extent(0), cols = x.extent(1);
  if constexpr (runs_on_host<Exec>) {
    if (host::rows_contiguous(x) && host::rows_contiguous(y) && bias.stride(0) == 1) {
      // Rows as pointers, in explicit vectors: through View accessors GCC cannot rule out
      // that y overlaps x or the bias, and left the loop scalar.
      const Scalar* b = bias.data();
      Kokkos::parallel_for(
          "sextant::bias_gelu_forward", Kokkos::RangePolicy<Exec>(exec, 0, rows), KOKKOS_LAMBDA(const std::int64_t i) {
            const Scalar* xi = host::row(x, i);
            Scalar* yi = host::row(y, i);
            host::for_each_block<Scalar, gelu_lockstep>(cols, [&](auto at) {
              auto z = biased(at, xi, b);
              Gelu::forwards(z.v);
              SEXTANT_LOCKSTEP for (int k = 0; k < at.count; ++k) at.store(yi, k, z.v[k]);
            });
          });
      return;
    }
    Kokkos::parallel_for(
        "sextant::bias_gelu_forward", Kokkos::RangePolicy<Exec>(exec, 0, rows), KOKKOS_LAMBDA(const std::int64_t i) {
          for (std::int64_t j = 0; j < cols; ++j) y(i, j) = Gelu::forward<Scalar>(x(i, j) + bias(j));
        });
  } else {
    using Policy = Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>;
    Kokkos::parallel_for(
        "sextant::bias_gelu_forward", Policy(exec, {0, 0}, {rows, cols}),
        KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j) {
          y(i, j) = Gelu::forward<Scalar>(x(i, j) + bias(j));
        });
  }
}

// dx = dy * gelu'(x + bias); dbias_j = sum_i dx_ij.
template <class Exec, class VDY, class VX, class VB, class VDX, class VDB>
void bias_gelu_backward(const Exec& exec, VDY dy, VX x, VB bias, VDX dx, VDB dbias) {
  using Scalar = typename VDX::non_const_value_type;
  const std::int64_t rows = x.extent(0), cols = x.extent(1);
  if (std::int64_t(dy.extent(0)) != rows || std::int64_t(dy.extent(1)) != cols ||
      std::int64_t(dx.extent(0)) != rows || std::int64_t(dx.extent(1)) != cols ||
      std::int64_t(bias.extent(0)) != cols || std::int64_t(dbias.extent(0)) != cols)
    throw std::invalid_argument("sextant::bias_gelu_backward: shapes do not match");
  if constexpr (runs_on_host<Exec>) {
    if (host::rows_contiguous(dy) && host::rows_contiguous(x) && host::rows_contiguous(dx) && bias.stride(0) == 1) {
      const std::int64_t chunks = ceil_div(rows, host::rows_per_chunk);
      View2<Scalar, Exec> partial(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "sextant::bias_gelu_partial"),
                                  chunks, cols);
      const Scalar* b = bias.data();
      Kokkos::parallel_for(
          "sextant::bias_gelu_backward", Kokkos::RangePolicy<Exec>(exec, 0, chunks),
          KOKKOS_LAMBDA(const std::int64_t chunk) {
            Scalar* db = &partial(chunk, 0);
            for (std::int64_t j = 0; j < cols; ++j) db[j] = Scalar(0);
            const std::int64_t end = (chunk + 1) * host::rows_per_chunk < rows ? (chunk + 1) * host::rows_per_chunk : rows;
            for (std::int64_t i = chunk * host::rows_per_chunk; i < end; ++i) {
              const Scalar* dyi = host::row(dy, i);
              const Scalar* xi = host::row(x, i);
              Scalar* dxi = host::row(dx, i);
              host::for_each_block<Scalar, gelu_lockstep>(cols, [&](auto at) {
                auto z = biased(at, xi, b);
                Gelu::derivatives(z.v);
                SEXTANT_LOCKSTEP for (int k = 0; k < at.count; ++k) {
                  const auto g = at.load(dyi, k) * z.v[k];
                  at.store(dxi, k, g);
                  at.store(db, k, at.load(db, k) + g);
                }
              });
            }
          });
      host::add_partial_rows(exec, partial, 0, dbias);
      return;
    }
  }
  column_sums<1, Exec, Scalar>(
      exec, rows, cols, "sextant::bias_gelu_backward",
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j, Scalar* sum) {
        const Scalar g = dy(i, j) * Gelu::derivative<Scalar>(x(i, j) + bias(j));
        dx(i, j) = g;
        sum[0] += g;
      },
      KOKKOS_LAMBDA(const std::int64_t j, const Scalar* sum) { dbias(j) = sum[0]; });
}

template <class Exec, class VX, class VY>
void relu_forward(const Exec& exec, VX x, VY y) {
  using Scalar = typename VY::non_const_value_type;
  Kokkos::parallel_for(
      "sextant::relu_forward", Kokkos::RangePolicy<Exec>(exec, 0, y.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { y(i) = x(i) > Scalar(0) ? Scalar(x(i)) : Scalar(0); });
}

template <class Exec, class VDY, class VX, class VDX>
void relu_backward(const Exec& exec, VDY dy, VX x, VDX dx) {
  using Scalar = typename VDX::non_const_value_type;
  Kokkos::parallel_for(
      "sextant::relu_backward", Kokkos::RangePolicy<Exec>(exec, 0, dx.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const Scalar g = dy(i);  // loaded unconditionally: a select, not a branch, so it vectorises
        dx(i) = x(i) > Scalar(0) ? g : Scalar(0);
      });
}

}  // namespace sextant::kernels
