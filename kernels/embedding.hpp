#pragma once
// Embedding lookup (forward gather) and its gradient (backward scatter-add):
//   forward  out(t, :) = table(index(t), :)                     t < T, index in [0, V)
//   backward dtable = 0; dtable(index(t), :) += dout(t, :)     for every t
// The backward pass writes the whole gradient (zeroed first, as a framework's fresh
// gradient buffer is). Host: the tokens are bucketed by block of vocabulary rows (a
// stable counting sort, in token order), and a work item per block zeroes its rows and
// adds its tokens' rows into them: no atomics, and the same sums on any thread count.
// Elsewhere: a zeroing pass, then atomic adds: repeated indices collide, so the order of
// the additions, and the last bits of a sum, may vary from run to run.
//
// Counted FLOPs: forward 0; backward T D (one add per gradient element).
// Bytes (index size i bytes): forward T D s read + T D s written + T i; backward
// V D s (zeroing) + T D s (dout read) + 2 T D s (read-modify-write of dtable rows) + T i.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/counts.hpp"
#include "kernels/host_loops.hpp"

namespace sextant::kernels {

template <class Exec, class VT, class VI, class VO>
void embedding_forward(const Exec& exec, VT table, VI index, VO out) {
  if (out.extent(0) != index.extent(0) || out.extent(1) != table.extent(1))
    throw std::invalid_argument("sextant::embedding_forward: shapes do not match");
  if constexpr (runs_on_host<Exec>) {
    if (host::rows_contiguous(table) && host::rows_contiguous(out)) {
      // A work item per token copies its row as one contiguous loop (the 2-D range
      // re-read the index and tiled every row into short pieces), and asks for the next
      // token's row meanwhile: a row of a few KiB at a random place in the table ends
      // about when a hardware prefetcher has learnt it.
      using Scalar = typename VO::non_const_value_type;
      const std::int64_t dim = out.extent(1), tokens = out.extent(0);
      Kokkos::parallel_for(
          "sextant::embedding_forward", Kokkos::RangePolicy<Exec>(exec, 0, tokens),
          KOKKOS_LAMBDA(const std::int64_t t) {
            const Scalar* from = host::row(table, std::int64_t(index(t)));
            Scalar* to = host::row(out, t);
            const Scalar* next = host::row(table, std::int64_t(index(t + 1 < tokens ? t + 1 : t)));
            host::for_each<Scalar>(dim, [&](auto at) {
              host::prefetch_along(at, next);
              at.store(to, at.load(from));
            });
          });
      return;
    }
  }
  using Policy = Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>;
  Kokkos::parallel_for(
      "sextant::embedding_forward",
      Policy(exec, {0, 0}, {std::int64_t(out.extent(0)), std::int64_t(out.extent(1))}),
      KOKKOS_LAMBDA(const std::int64_t t, const std::int64_t d) { out(t, d) = table(index(t), d); });
}

// Vocabulary rows per work item of the host path: at most 256 blocks, so that the
// buckets stay few, and as many as a machine's cores can share.
inline constexpr std::int64_t embedding_max_blocks = 256;

template <class Exec, class VO, class VI, class VT>
void embedding_backward_host(const Exec& exec, VO dout, VI index, VT dtable) {
  using Scalar = typename VT::non_const_value_type;
  const std::int64_t vocab = dtable.extent(0), tokens = index.extent(0), dim = dtable.extent(1);
  const std::int64_t per_block = ceil_div(vocab, embedding_max_blocks), blocks = ceil_div(vocab, per_block);
  // Tokens by block, in token order (indices outside [0, vocab) are skipped, as the
  // device path's atomics would fault on them).
  std::vector<std::int64_t> start(blocks + 1, 0), order(tokens);
  for (std::int64_t t = 0; t < tokens; ++t)
    if (index(t) >= 0 && index(t) < vocab) ++start[index(t) / per_block + 1];
  for (std::int64_t b = 0; b < blocks; ++b) start[b + 1] += start[b];
  std::vector<std::int64_t> next(start.begin(), start.end() - 1);
  for (std::int64_t t = 0; t < tokens; ++t)
    if (index(t) >= 0 && index(t) < vocab) order[next[index(t) / per_block]++] = t;
  const std::int64_t* first = start.data();
  const std::int64_t* by_block = order.data();
  Kokkos::parallel_for(
      "sextant::embedding_backward", Kokkos::RangePolicy<Exec>(exec, 0, blocks), [&](const std::int64_t b) {
        const std::int64_t v0 = b * per_block, v1 = v0 + per_block < vocab ? v0 + per_block : vocab;
        for (std::int64_t v = v0; v < v1; ++v) {
          Scalar* row = &dtable(v, 0);
          for (std::int64_t d = 0; d < dim; ++d) row[d] = Scalar(0);
        }
        for (std::int64_t k = first[b]; k < first[b + 1]; ++k) {
          const std::int64_t t = by_block[k];
          Scalar* row = &dtable(index(t), 0);
          const auto* grad = &dout(t, 0);
          SEXTANT_INDEPENDENT_ITERATIONS
          for (std::int64_t d = 0; d < dim; ++d) row[d] += Scalar(grad[d]);
        }
      });
  exec.fence();  // the buckets live on this stack frame
}

template <class Exec, class VO, class VI, class VT>
void embedding_backward(const Exec& exec, VO dout, VI index, VT dtable) {
  using Scalar = typename VT::non_const_value_type;
  if (dout.extent(0) != index.extent(0) || dout.extent(1) != dtable.extent(1))
    throw std::invalid_argument("sextant::embedding_backward: shapes do not match");
  if constexpr (runs_on_host<Exec>) {
    if ((dout.extent(1) <= 1 || dout.stride(1) == 1) && (dtable.extent(1) <= 1 || dtable.stride(1) == 1)) {
      embedding_backward_host(exec, dout, index, dtable);
      return;
    }
  }
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
