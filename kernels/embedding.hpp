#pragma once
// Embedding lookup (forward gather) and its gradient (backward scatter-add):
//   forward  out(t, :) = table(index(t), :)                     t < T, index in [0, V)
//   backward dtable = 0; dtable(index(t), :) += dout(t, :)     for every t
// The backward pass writes the whole gradient (zeroed first, as a framework's fresh
// gradient buffer is), then adds with atomics: repeated indices collide, so the order of
// the additions, and the last bits of a sum, may vary from run to run.
//
// Counted FLOPs: forward 0; backward T D (one add per gradient element).
// Bytes (index size i bytes): forward T D s read + T D s written + T i; backward
// V D s (zeroing) + T D s (dout read) + 2 T D s (read-modify-write of dtable rows) + T i.
#include <cstdint>
#include <stdexcept>

#include "kernels/common.hpp"

namespace sextant::kernels {

inline constexpr double embedding_forward_flops(double, double) { return 0; }
inline constexpr double embedding_backward_flops(double tokens, double dim) { return tokens * dim; }
inline constexpr double embedding_forward_bytes(double tokens, double dim, double s, double index_bytes) {
  return 2 * tokens * dim * s + tokens * index_bytes;
}
inline constexpr double embedding_backward_bytes(double vocab, double tokens, double dim, double s,
                                                 double index_bytes) {
  return (vocab * dim + 3 * tokens * dim) * s + tokens * index_bytes;
}

template <class Exec, class VT, class VI, class VO>
void embedding_forward(const Exec& exec, VT table, VI index, VO out) {
  if (out.extent(0) != index.extent(0) || out.extent(1) != table.extent(1))
    throw std::invalid_argument("sextant::embedding_forward: shapes do not match");
  using Policy = Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>;
  Kokkos::parallel_for(
      "sextant::embedding_forward",
      Policy(exec, {0, 0}, {std::int64_t(out.extent(0)), std::int64_t(out.extent(1))}),
      KOKKOS_LAMBDA(const std::int64_t t, const std::int64_t d) { out(t, d) = table(index(t), d); });
}

template <class Exec, class VO, class VI, class VT>
void embedding_backward(const Exec& exec, VO dout, VI index, VT dtable) {
  using Scalar = typename VT::non_const_value_type;
  if (dout.extent(0) != index.extent(0) || dout.extent(1) != dtable.extent(1))
    throw std::invalid_argument("sextant::embedding_backward: shapes do not match");
  using Policy = Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>;
  Kokkos::parallel_for(
      "sextant::embedding_backward_zero",
      Policy(exec, {0, 0}, {std::int64_t(dtable.extent(0)), std::int64_t(dtable.extent(1))}),
      KOKKOS_LAMBDA(const std::int64_t v, const std::int64_t d) { dtable(v, d) = Scalar(0); });
  Kokkos::parallel_for(
      "sextant::embedding_backward_scatter",
      Policy(exec, {0, 0}, {std::int64_t(dout.extent(0)), std::int64_t(dout.extent(1))}),
      KOKKOS_LAMBDA(const std::int64_t t, const std::int64_t d) {
        Kokkos::atomic_add(&dtable(index(t), d), Scalar(dout(t, d)));
      });
}

}  // namespace sextant::kernels
