#pragma once
// Kernels the training proxy needs that kernels/ does not have (yet): the head permutes
// around attention, a vocabulary-parallel softmax cross-entropy, packing scattered
// elements into one message, and the mixture of experts' routing. Same conventions as
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
using kernels::moe_combine_backward_bytes;
using kernels::moe_combine_backward_flops;
using kernels::moe_combine_bytes;
using kernels::moe_combine_flops;
using kernels::moe_dispatch_backward_bytes;
using kernels::moe_dispatch_backward_flops;
using kernels::moe_dispatch_bytes;
using kernels::moe_gate_backward_bytes;
using kernels::moe_gate_backward_flops;
using kernels::moe_regroup_bytes;
using kernels::moe_route_bytes;

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

// ---- element type conversion -------------------------------------------------------------
// Mixed precision's widening of the gradients into the master's type and narrowing of the
// master parameters into the step's (kernels::convert_bytes).
template <class Exec, class From, class To>
void convert(const Exec& exec, const From* from, To* to, std::int64_t n) {
  Kokkos::parallel_for(
      "sextant::train::convert", Kokkos::RangePolicy<Exec>(exec, 0, n),
      KOKKOS_LAMBDA(const std::int64_t i) { to[i] = To(from[i]); });
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

// ---- mixture of experts (model::TrainConfig::experts) -----------------------------------
// T tokens of H features, E experts of C rows each, k choices per token; what each pass
// counts: kernels/counts.hpp. An expert row is e C + c; -1 marks a dropped choice (its
// expert was full) or an empty row.

// probs [T, E] (the router's softmax) -> choice [T, k] (each token's k most probable
// experts, the lower index first among equals), rows [T, k] (the row each choice took)
// and tokens [E C] (each row's token). An expert's rows go to first choices before
// second ones, each in token order (GShard's priority): a micro-batch's routing is its
// own, whatever the layout.
template <class Exec, class Scalar>
void moe_route(const Exec& exec, const Scalar* probs, std::int32_t* choice, std::int32_t* rows, std::int32_t* tokens,
               std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t C) {
  Kokkos::parallel_for(
      "sextant::train::moe_top_k", Kokkos::RangePolicy<Exec>(exec, 0, T), KOKKOS_LAMBDA(const std::int64_t t) {
        const Scalar* p = probs + t * E;
        std::int32_t* mine = choice + t * k;
        for (std::int64_t j = 0; j < k; ++j) {
          std::int64_t best = -1;
          for (std::int64_t e = 0; e < E; ++e) {
            bool taken = false;
            for (std::int64_t i = 0; i < j; ++i) taken = taken || mine[i] == e;
            if (!taken && (best < 0 || p[e] > p[best])) best = e;
          }
          mine[j] = std::int32_t(best);
        }
      });
  Kokkos::parallel_for(
      "sextant::train::moe_route", Kokkos::RangePolicy<Exec>(exec, 0, E), KOKKOS_LAMBDA(const std::int64_t e) {
        std::int64_t used = 0;
        for (std::int64_t j = 0; j < k; ++j)
          for (std::int64_t t = 0; t < T; ++t) {
            if (choice[t * k + j] != e) continue;
            if (used < C) {
              rows[t * k + j] = std::int32_t(e * C + used);
              tokens[e * C + used] = std::int32_t(t);
              ++used;
            } else {
              rows[t * k + j] = -1;
            }
          }
        for (; used < C; ++used) tokens[e * C + used] = -1;
      });
}

// out [R, H]: each row its token's x row, an empty row zeros.
template <class Exec, class Scalar>
void moe_dispatch(const Exec& exec, const Scalar* x, const std::int32_t* tokens, Scalar* out, std::int64_t R,
                  std::int64_t H) {
  Kokkos::parallel_for(
      "sextant::train::moe_dispatch", Kokkos::RangePolicy<Exec>(exec, 0, R), KOKKOS_LAMBDA(const std::int64_t r) {
        const std::int64_t t = tokens[r];
        Scalar* o = out + r * H;
        for (std::int64_t d = 0; d < H; ++d) o[d] = t < 0 ? Scalar(0) : x[t * H + d];
      });
}

// f(r) for each of token t's kept choices, r its row.
template <class F>
KOKKOS_INLINE_FUNCTION void for_kept_rows(const std::int32_t* rows, std::int64_t t, std::int64_t k, F&& f) {
  for (std::int64_t j = 0; j < k; ++j)
    if (const std::int64_t r = rows[t * k + j]; r >= 0) f(r);
}

// y [T, H] = sum over each token's kept choices of its probability times the expert's row.
template <class Exec, class Scalar>
void moe_combine(const Exec& exec, const Scalar* out, const Scalar* probs, const std::int32_t* rows, Scalar* y,
                 std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t C, std::int64_t H) {
  Kokkos::parallel_for(
      "sextant::train::moe_combine", Kokkos::RangePolicy<Exec>(exec, 0, T), KOKKOS_LAMBDA(const std::int64_t t) {
        Scalar* yt = y + t * H;
        for (std::int64_t d = 0; d < H; ++d) yt[d] = 0;
        for_kept_rows(rows, t, k, [&](std::int64_t r) {
          const Scalar g = probs[t * E + r / C];
          const Scalar* o = out + r * H;
          for (std::int64_t d = 0; d < H; ++d) yt[d] += g * o[d];
        });
      });
}

// The combine's backward. Of the rows: dout [R, H], each row its token's gradient times
// the probability it was weighted by (an empty row zeros).
template <class Exec, class Scalar>
void moe_combine_backward(const Exec& exec, const Scalar* dy, const Scalar* probs, const std::int32_t* tokens,
                          Scalar* dout, std::int64_t E, std::int64_t C, std::int64_t H) {
  Kokkos::parallel_for(
      "sextant::train::moe_combine_backward", Kokkos::RangePolicy<Exec>(exec, 0, E * C),
      KOKKOS_LAMBDA(const std::int64_t r) {
        const std::int64_t t = tokens[r];
        Scalar* o = dout + r * H;
        const Scalar g = t < 0 ? Scalar(0) : probs[t * E + r / C];
        for (std::int64_t d = 0; d < H; ++d) o[d] = t < 0 ? Scalar(0) : g * dy[t * H + d];
      });
}
// Of the probabilities: dprobs [T, E], a kept choice's the dot of its token's gradient with
// the expert's row, the others' zero (the choice itself has no gradient).
template <class Exec, class Scalar>
void moe_gate_backward(const Exec& exec, const Scalar* dy, const Scalar* out, const std::int32_t* rows, Scalar* dprobs,
                       std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t C, std::int64_t H) {
  Kokkos::parallel_for(
      "sextant::train::moe_gate_backward", Kokkos::RangePolicy<Exec>(exec, 0, T), KOKKOS_LAMBDA(const std::int64_t t) {
        Scalar* dp = dprobs + t * E;
        for (std::int64_t e = 0; e < E; ++e) dp[e] = 0;
        for_kept_rows(rows, t, k, [&](std::int64_t r) {
          const Scalar* o = out + r * H;
          const Scalar* g = dy + t * H;
          Scalar dot = 0;
          for (std::int64_t d = 0; d < H; ++d) dot += g[d] * o[d];
          dp[r / C] = dot;
        });
      });
}

// The dispatch's backward: dx [T, H], each token's the sum of its kept rows' gradients.
template <class Exec, class Scalar>
void moe_dispatch_backward(const Exec& exec, const Scalar* drows, const std::int32_t* rows, Scalar* dx, std::int64_t T,
                           std::int64_t k, std::int64_t H) {
  Kokkos::parallel_for(
      "sextant::train::moe_dispatch_backward", Kokkos::RangePolicy<Exec>(exec, 0, T),
      KOKKOS_LAMBDA(const std::int64_t t) {
        Scalar* o = dx + t * H;
        for (std::int64_t d = 0; d < H; ++d) o[d] = 0;
        for_kept_rows(rows, t, k, [&](std::int64_t r) {
          for (std::int64_t d = 0; d < H; ++d) o[d] += drows[r * H + d];
        });
      });
}

// Blocks of n elements from [A][B] order to [B][A] (the experts' rows between the
// all-to-all's order, by rank, and the experts', by expert).
template <class Exec, class Scalar>
void moe_regroup(const Exec& exec, const Scalar* in, Scalar* out, std::int64_t A, std::int64_t B, std::int64_t n) {
  Kokkos::parallel_for(
      "sextant::train::moe_regroup", Kokkos::RangePolicy<Exec>(exec, 0, A * B), KOKKOS_LAMBDA(const std::int64_t q) {
        const std::int64_t a = q / B, b = q % B;
        const Scalar* i = in + q * n;
        Scalar* o = out + (b * A + a) * n;
        for (std::int64_t e = 0; e < n; ++e) o[e] = i[e];
      });
}

}  // namespace sextant::train
