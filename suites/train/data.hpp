#pragma once
// Synthetic training data, the same for every parallel layout: token t of sample g of
// step k is drawn from (seed, k * global_batch + g, t) alone, and a dp rank reads the
// samples of its micro-batches, dp rank d's micro-batch m holding samples
// [(d M + m) b, (d M + m + 1) b) -- so one rank with dp M micro-batches sees exactly the
// same samples in the same order.
//
// The task is deterministic and learnable: the label of position t is
//   y_t = (x_t + (x_{t-1} mod 2)) mod V    (x_{-1} = 0)
// Knowing x_t alone leaves two candidates (loss can fall from ln V to about ln 2 through
// the embedding and the head alone); the rest needs attention to the previous position.
#include <cstdint>

#include "kernels/common.hpp"
#include "suites/train/tensors.hpp"

namespace sextant::train {

using TokenMatrix = Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem>;  // [micro-batches, tokens]

KOKKOS_INLINE_FUNCTION std::int32_t synthetic_token(std::uint64_t stream, std::int64_t sample, std::int64_t t,
                                                    std::int64_t seq, std::int64_t vocab) {
  auto v = std::int64_t(kernels::uniform01(stream, std::uint64_t(sample * seq + t)) * double(vocab));
  return std::int32_t(v < vocab ? v : vocab - 1);
}

// Fills the local embedding rows (tokens of this tp rank's vocabulary shard
// [shard_first, shard_first + shard_size) as their row in it, the others as row
// shard_size: the zero row) and the target token ids of this rank's micro-batches.
inline void fill_step_data(TokenMatrix rows, TokenMatrix targets, std::uint64_t seed, int step, int global_batch,
                           int dp_rank, int micro_batch, int seq, int vocab, int shard_first, int shard_size) {
  const std::int64_t M = rows.extent(0), T = rows.extent(1);
  const std::uint64_t stream = kernels::splitmix64(seed ^ 0xDA7A5EEDull);
  const std::int64_t first_sample = std::int64_t(step) * global_batch + std::int64_t(dp_rank) * M * micro_batch;
  const std::int64_t S = seq, V = vocab;
  const std::int32_t lo = shard_first, n = shard_size;
  Kokkos::parallel_for(
      "sextant::train::data", Kokkos::RangePolicy<Exec>(0, M * T), KOKKOS_LAMBDA(const std::int64_t e) {
        const std::int64_t m = e / T, i = e % T, t = i % S;
        const std::int64_t sample = first_sample + m * (T / S) + i / S;
        const std::int32_t x = synthetic_token(stream, sample, t, S, V);
        const std::int32_t prev = t > 0 ? synthetic_token(stream, sample, t - 1, S, V) : 0;
        targets(m, i) = std::int32_t((x + prev % 2) % V);
        rows(m, i) = (x >= lo && x < lo + n) ? x - lo : n;
      });
}

// Position in its sequence of every token of a micro-batch from first_token on (a
// sequence-parallel rank's share): t mod seq.
inline void fill_positions(Tokens positions, std::int64_t seq, std::int64_t first_token = 0) {
  Kokkos::parallel_for(
      "sextant::train::positions", Kokkos::RangePolicy<Exec>(0, positions.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t t) { positions(t) = std::int32_t((first_token + t) % seq); });
}

}  // namespace sextant::train
