#pragma once
// Kernels the training proxy needs that kernels/ does not have (yet): the head permutes
// around attention, a vocabulary-parallel softmax cross-entropy, and packing scattered
// elements into one message. Same conventions as
// kernels/*.hpp (templates on the execution space, labelled launches); their counts are
// in kernels/counts.hpp with every other kernel's, where models/train_plan.cpp finds them.
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "core/bfloat16.hpp"
#include "kernels/common.hpp"
#include "kernels/counts.hpp"
#include "kernels/fast_math.hpp"

namespace sextant::train {

namespace kk = sextant::kernels;

// kernels/common.hpp's math namespace has no log (Kokkos 3.6 moved it, 4.0 dropped the old name).
namespace math {
#if KOKKOS_VERSION >= 30700
using Kokkos::log;
#else
using Kokkos::Experimental::log;
#endif
}  // namespace math

// Counts and families: kernels/counts.hpp, shared with the step plan (models/).
using kernels::cross_entropy_backward_bytes;
using kernels::cross_entropy_backward_flops;
using kernels::cross_entropy_max_bytes;
using kernels::cross_entropy_max_flops;
using kernels::cross_entropy_sum_bytes;
using kernels::cross_entropy_sum_flops;
using kernels::family_of;
using kernels::heads_permute_bytes;

// ---- packing ---------------------------------------------------------------------------
// to[i] = from[index[i]] (pack) and its inverse (unpack): scattered elements gathered into
// one message and back. Counted as the STREAM copy they are (the index read aside).
template <class Exec, class Index, class Scalar>
void pack_elements(const Exec& exec, Index index, const Scalar* from, Scalar* to) {
  Kokkos::parallel_for(
      "sextant::train::pack", Kokkos::RangePolicy<Exec>(exec, 0, index.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { to[i] = from[index(i)]; });
}
template <class Exec, class Index, class Scalar>
void unpack_elements(const Exec& exec, Index index, const Scalar* from, Scalar* to) {
  Kokkos::parallel_for(
      "sextant::train::unpack", Kokkos::RangePolicy<Exec>(exec, 0, index.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { to[index(i)] = from[i]; });
}

// ---- bfloat16 (core/bfloat16.hpp) -------------------------------------------------------
// The compressed gradient sync's conversions, each element read once and written once
// (kernels::bfloat16_convert_bytes). float64 is rounded to float32 on the way.
template <class Exec, class Scalar>
void to_bfloat16(const Exec& exec, const Scalar* from, std::uint16_t* to, std::int64_t n) {
  Kokkos::parallel_for(
      "sextant::train::to_bfloat16", Kokkos::RangePolicy<Exec>(exec, 0, n),
      KOKKOS_LAMBDA(const std::int64_t i) { to[i] = bf16::from_float(float(from[i])); });
}
template <class Exec, class Scalar>
void from_bfloat16(const Exec& exec, const std::uint16_t* from, Scalar* to, std::int64_t n) {
  Kokkos::parallel_for(
      "sextant::train::from_bfloat16", Kokkos::RangePolicy<Exec>(exec, 0, n),
      KOKKOS_LAMBDA(const std::int64_t i) { to[i] = Scalar(bf16::to_float(from[i])); });
}

// ---- head permutes ---------------------------------------------------------------------
// split_heads: [b * S, G * Al * D] (token-major, as the QKV GEMM writes it) to
// G x [b * Al, S, D] (batch-head-major, as attention reads it); merge_heads the inverse.
// Pure data movement: 0 FLOPs, every element read once and written once.

// dst is G contiguous blocks of [b * Al, S, D] starting at dst_data.
template <class Exec, class V2, class Scalar>
void split_heads(const Exec& exec, V2 src, Scalar* dst_data, std::int64_t b, std::int64_t S, std::int64_t G,
                 std::int64_t Al, std::int64_t D) {
  const std::int64_t T = b * S, Hl = Al * D;
  if (std::int64_t(src.extent(0)) != T || std::int64_t(src.extent(1)) != G * Hl)
    throw std::invalid_argument("sextant::split_heads: shapes do not match");
  // One token per iteration, its G x Al heads of D contiguous elements copied whole
  // (c = (g Al + h) D + d): no index division in the inner loops.
  Kokkos::parallel_for(
      "sextant::split_heads", Kokkos::RangePolicy<Exec>(exec, 0, T), KOKKOS_LAMBDA(const std::int64_t i) {
        const std::int64_t bi = i / S, s = i % S;
        for (std::int64_t g = 0; g < G; ++g)
          for (std::int64_t h = 0; h < Al; ++h) {
            const std::int64_t c0 = (g * Al + h) * D;
            Scalar* out = dst_data + (((g * b + bi) * Al + h) * S + s) * D;
            for (std::int64_t d = 0; d < D; ++d) out[d] = src(i, c0 + d);
          }
      });
}

template <class Exec, class V2, class Scalar>
void merge_heads(const Exec& exec, const Scalar* src_data, V2 dst, std::int64_t b, std::int64_t S, std::int64_t G,
                 std::int64_t Al, std::int64_t D) {
  const std::int64_t T = b * S, Hl = Al * D;
  if (std::int64_t(dst.extent(0)) != T || std::int64_t(dst.extent(1)) != G * Hl)
    throw std::invalid_argument("sextant::merge_heads: shapes do not match");
  Kokkos::parallel_for(
      "sextant::merge_heads", Kokkos::RangePolicy<Exec>(exec, 0, T), KOKKOS_LAMBDA(const std::int64_t i) {
        const std::int64_t bi = i / S, s = i % S;
        for (std::int64_t g = 0; g < G; ++g)
          for (std::int64_t h = 0; h < Al; ++h) {
            const std::int64_t c0 = (g * Al + h) * D;
            const Scalar* in = src_data + (((g * b + bi) * Al + h) * S + s) * D;
            for (std::int64_t d = 0; d < D; ++d) dst(i, c0 + d) = in[d];
          }
      });
}

// ---- vocabulary-parallel softmax cross-entropy -----------------------------------------
// Each tensor-parallel rank holds the logits of its vocabulary shard [offset, offset + cols)
// for every row (token). Loss per row: log sum_j exp(z_j - m) + m - z_target, m = max_j z_j,
// with the sums over the whole vocabulary, so the shards combine partial results:
//   cross_entropy_max      m_i = max over the shard         -> allreduce(max) over tp
//   cross_entropy_sum      s_i = sum exp(z - m), t_i = z_target (0 off-shard) -> allreduce(sum)
//   cross_entropy_backward dz = scale (exp(z - m) / s - [j = target]) in place of z, and
//                          returns sum_i (log s_i + m_i - t_i) (the loss, unscaled)
// (Megatron's vocab-parallel cross-entropy.) stats holds [rows, 2]: s and t. What each
// pass counts: kernels/counts.hpp.

template <class Exec, class V2, class V1>
void cross_entropy_max(const Exec& exec, V2 z, V1 m) {
  using Scalar = typename V1::non_const_value_type;
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
  const int cols = int(z.extent(1));
  Kokkos::parallel_for(
      "sextant::cross_entropy_max", Kokkos::TeamPolicy<Exec>(exec, int(z.extent(0)), Kokkos::AUTO),
      KOKKOS_LAMBDA(const Member& team) {
        const std::int64_t i = team.league_rank();
        Scalar mx;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, cols),
            [&](const int j, Scalar& local) { local = z(i, j) > local ? Scalar(z(i, j)) : local; },
            Kokkos::Max<Scalar>(mx));
        Kokkos::single(Kokkos::PerTeam(team), [&]() { m(i) = mx; });
      });
}

template <class Exec, class V2, class VI, class V1, class VS>
void cross_entropy_sum(const Exec& exec, V2 z, VI targets, std::int64_t offset, V1 m, VS stats) {
  using Scalar = typename V1::non_const_value_type;
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
  const int cols = int(z.extent(1));
  Kokkos::parallel_for(
      "sextant::cross_entropy_sum", Kokkos::TeamPolicy<Exec>(exec, int(z.extent(0)), Kokkos::AUTO),
      KOKKOS_LAMBDA(const Member& team) {
        const std::int64_t i = team.league_rank();
        const Scalar mi = m(i);
        Scalar sum;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, cols),
            [&](const int j, Scalar& local) { local += kk::fast::exp_nonpositive(Scalar(z(i, j) - mi)); }, sum);
        const std::int64_t t = std::int64_t(targets(i)) - offset;
        Kokkos::single(Kokkos::PerTeam(team), [&]() {
          stats(i, 0) = sum;
          stats(i, 1) = (t >= 0 && t < cols) ? Scalar(z(i, t)) : Scalar(0);
        });
      });
}

// Returns the sum over rows of the per-row loss (on the host).
template <class Exec, class V2, class VI, class V1, class VS>
double cross_entropy_backward(const Exec& exec, V2 z, VI targets, std::int64_t offset, V1 m, VS stats,
                              typename V1::non_const_value_type scale) {
  using Scalar = typename V1::non_const_value_type;
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
  const int cols = int(z.extent(1));
  double loss = 0;
  Kokkos::parallel_reduce(
      "sextant::cross_entropy_backward", Kokkos::TeamPolicy<Exec>(exec, int(z.extent(0)), Kokkos::AUTO),
      KOKKOS_LAMBDA(const Member& team, double& total) {
        const std::int64_t i = team.league_rank();
        const Scalar mi = m(i), inv = Scalar(1) / stats(i, 0);
        const std::int64_t t = std::int64_t(targets(i)) - offset;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols), [&](const int j) {
          const Scalar p = kk::fast::exp_nonpositive(Scalar(z(i, j) - mi)) * inv;
          z(i, j) = (p - (j == t ? Scalar(1) : Scalar(0))) * scale;
        });
        Kokkos::single(Kokkos::PerTeam(team), [&]() {
          total += double(math::log(stats(i, 0)) + mi - stats(i, 1));
        });
      },
      loss);
  return loss;
}

}  // namespace sextant::train
