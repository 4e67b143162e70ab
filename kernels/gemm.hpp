#pragma once
// GEMM and batched GEMM: C = alpha op(A) op(B) + beta C, op = identity or transpose,
// on row-major Views (rank 2, or rank 3 with a leading batch index).
//
// The structure is BLIS's, expressed with a TeamPolicy. A team owns one NB-wide column
// block of C and one or more MB-high row blocks of it (per batch entry). For each
// KB-deep slice of K it packs op(B)'s KB x NB block into team scratch once, then for
// each of its row blocks packs op(A)'s MB x KB block, and its threads share the MR x NR
// register micro-tiles of that block (packing zero-pads to whole micro-panels, so edges
// cost nothing special). A micro-tile keeps MR * NR accumulators in registers over the
// slice: per k it loads NR values of B (vectors along a row of C), broadcasts MR values
// of A and does MR * NR multiply-adds, in fixed-size loops the compiler unrolls and
// vectorises. Tile sizes come from GemmTiling: on the host a one-thread team with
// blocks in level-1 scratch sized at run time from the CPU's caches
// (kernels/gemm_blocks.hpp), a micro-tile sized from the ISA's register file, and
// enough row blocks per team to reuse each packed B block while keeping ~2 teams per
// thread; on a GPU a 256-thread team per 64 x 64 block with shared-memory (level-0)
// scratch and a 4 x 4 tile per thread.
//
// Counted: 2 M N K FLOPs per batch entry (the alpha/beta scaling is not counted).
// Bytes: compulsory traffic, each of A, B and C moved once: (M K + K N + M N) scalars,
// plus M N more when beta != 0 (C is read). Re-reads of A and B across blocks are not
// counted; the ratio of the two is the kernel's best-case arithmetic intensity.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/common.hpp"
#include "kernels/counts.hpp"
#include "kernels/gemm_blocks.hpp"
#include "kernels/isa.hpp"

namespace sextant::kernels {

enum class Trans : bool { no = false, yes = true };

template <class Exec, class Scalar>
struct GemmTiling {
  static constexpr bool host = runs_on_host<Exec>;
  // Host: a micro-tile of MR rows x NR_VECTORS vector registers of accumulators, sized
  // from the ISA's register file (kernels/isa.hpp) so that the accumulators, NR_VECTORS
  // loads of B and one broadcast of A fit without spilling: 6 x 4 = 24 of 32 registers
  // with AVX-512, 6 x 2 = 12 of 16 with AVX2 (BLIS's Haswell and SkylakeX shapes).
  static constexpr int NR_VECTORS = isa::vector_registers >= 32 ? 4 : 2;
  static constexpr int MR = host ? 6 : 4;
  static constexpr int NR = host ? NR_VECTORS * isa::lanes<Scalar> : 4;
  static constexpr int scratch_level = host ? 1 : 0;
  // Host teams take several row blocks of one column block, so that the packed B block
  // is reused across them (BLIS's loop order) while there are still about
  // teams_per_thread teams per thread to balance. GPU teams take one block each.
  static constexpr int teams_per_thread = host ? 2 : 0;
  // The cache blocks: on the host from the CPU's caches at run time
  // (kernels/gemm_blocks.hpp); on a GPU a 64 x 64 block of C per team, 16 deep, in
  // shared memory.
  static GemmBlocks blocks() {
    if constexpr (host) return host_gemm_blocks(MR, NR, int(sizeof(Scalar)));
    else return GemmBlocks{64, 64, 16, "device"};
  }
  static int team_size(const GemmBlocks& b) { return host ? 1 : (b.mb / MR) * (b.nb / NR); }
};

namespace detail {

// Element (i, j) of a rank-2 View, or of batch entry b of a rank-3 View.
template <class V>
KOKKOS_FORCEINLINE_FUNCTION decltype(auto) at(const V& v, std::int64_t b, std::int64_t i,
                                              std::int64_t j) {
  if constexpr (rank_of<V> == 3) {
    return v(b, i, j);
  } else {
    (void)b;
    return v(i, j);
  }
}

template <class Exec, class VA, class VB, class VC>
struct Gemm {
  using Scalar = typename VC::non_const_value_type;
  using Tiling = GemmTiling<Exec, Scalar>;
  static constexpr int MR = Tiling::MR, NR = Tiling::NR;
  using Scratch =
      Kokkos::View<Scalar*, typename Exec::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;

  VA A;
  VB B;
  VC C;
  Scalar alpha, beta;
  bool trans_a, trans_b;
  std::int64_t M, N, K, tiles_m, tiles_n;
  int MB, NB, KB;           // the cache blocks (GemmTiling::blocks)
  std::int64_t row_blocks;  // MB-row blocks per team
  std::int64_t block_n;     // column block width: NB or less, so that blocks are even

  std::size_t scratch_bytes() const {
    return Scratch::shmem_size(std::size_t(MB) * KB) + Scratch::shmem_size(std::size_t(KB) * NB);
  }

  // Packs rows [i0, i0 + mb) of op(A), columns [k0, k0 + kb), as micro-panels of MR
  // rows: Ap[(p * KB + k) * MR + r] = op(A)(i0 + p * MR + r, k0 + k), zero past mb.
  KOKKOS_INLINE_FUNCTION void pack_a(const Member& team, const Scratch& Ap, std::int64_t b,
                                     std::int64_t i0, int mb, std::int64_t k0, int kb) const {
    const int panels = int(ceil_div(mb, MR));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, panels), [&](const int p) {
      Scalar* dst = &Ap(std::int64_t(p) * KB * MR);
      const int rows = mb - p * MR < MR ? mb - p * MR : MR;
      const std::int64_t i = i0 + std::int64_t(p) * MR;
      if (trans_a) {  // op(A)(i, k) = A(k, i): rows of A are contiguous in i
        for (int k = 0; k < kb; ++k)
          for (int r = 0; r < MR; ++r) dst[k * MR + r] = r < rows ? at(A, b, k0 + k, i + r) : Scalar(0);
      } else {
        for (int r = 0; r < MR; ++r) {
          if (r < rows)
            for (int k = 0; k < kb; ++k) dst[k * MR + r] = at(A, b, i + r, k0 + k);
          else
            for (int k = 0; k < kb; ++k) dst[k * MR + r] = Scalar(0);
        }
      }
    });
  }

  // Packs rows [k0, k0 + kb) of op(B), columns [j0, j0 + nb), as micro-panels of NR
  // columns: Bp[(p * KB + k) * NR + c] = op(B)(k0 + k, j0 + p * NR + c), zero past nb.
  KOKKOS_INLINE_FUNCTION void pack_b(const Member& team, const Scratch& Bp, std::int64_t b,
                                     std::int64_t j0, int nb, std::int64_t k0, int kb) const {
    const int panels = int(ceil_div(nb, NR));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, panels), [&](const int p) {
      Scalar* dst = &Bp(std::int64_t(p) * KB * NR);
      const int cols = nb - p * NR < NR ? nb - p * NR : NR;
      const std::int64_t j = j0 + std::int64_t(p) * NR;
      if (trans_b) {  // op(B)(k, j) = B(j, k): rows of B are contiguous in k
        for (int c = 0; c < NR; ++c) {
          if (c < cols)
            for (int k = 0; k < kb; ++k) dst[k * NR + c] = at(B, b, j + c, k0 + k);
          else
            for (int k = 0; k < kb; ++k) dst[k * NR + c] = Scalar(0);
        }
      } else if (cols == NR) {
        for (int k = 0; k < kb; ++k)
          for (int c = 0; c < NR; ++c) dst[k * NR + c] = at(B, b, k0 + k, j + c);
      } else {
        for (int k = 0; k < kb; ++k)
          for (int c = 0; c < NR; ++c) dst[k * NR + c] = c < cols ? at(B, b, k0 + k, j + c) : Scalar(0);
      }
    });
  }

  // acc = packed A panel (kb x MR) times packed B panel (kb x NR): the register-tiled
  // inner loop. On the host, in explicit vectors: per k, NR / lanes loads of B, MR
  // broadcasts of A, MR * NR / lanes FMAs, every accumulator in a register.
  KOKKOS_FORCEINLINE_FUNCTION static void micro_tile(const Scalar* ap, const Scalar* bp, int kb,
                                                     Scalar (&acc)[MR][NR]) {
#ifdef SEXTANT_HOST_VECTORS
    if constexpr (Tiling::host && isa::has_vector<Scalar> && NR % isa::lanes<Scalar> == 0) {
      using V = typename isa::Vector<Scalar>::type;
      constexpr int L = isa::lanes<Scalar>, NV = NR / L;
      V c[MR][NV];
      for (int r = 0; r < MR; ++r)
        for (int v = 0; v < NV; ++v) c[r][v] = V{};
      for (int k = 0; k < kb; ++k) {
        V b[NV];
        for (int v = 0; v < NV; ++v) std::memcpy(&b[v], bp + k * NR + v * L, sizeof(V));
        for (int r = 0; r < MR; ++r) {
          const V a = ap[k * MR + r] - V{};  // a broadcast (x - 0 folds to x)
          for (int v = 0; v < NV; ++v) c[r][v] += a * b[v];
        }
      }
      for (int r = 0; r < MR; ++r)
        for (int v = 0; v < NV; ++v) std::memcpy(&acc[r][v * L], &c[r][v], sizeof(V));
      return;
    }
#endif
    for (int r = 0; r < MR; ++r)
      for (int c = 0; c < NR; ++c) acc[r][c] = Scalar(0);
    for (int k = 0; k < kb; ++k) {
      for (int r = 0; r < MR; ++r) {
        const Scalar av = ap[k * MR + r];
        for (int c = 0; c < NR; ++c) acc[r][c] += av * bp[k * NR + c];
      }
    }
  }

  // A team computes row blocks [g0, g0 + row_blocks) of column block j of batch entry b:
  // per KB-deep slice, B's block is packed once and each row block's A block in turn.
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const std::int64_t groups_m = ceil_div(tiles_m, row_blocks);
    const std::int64_t per_batch = groups_m * tiles_n;
    const std::int64_t b = team.league_rank() / per_batch;
    const std::int64_t rest = team.league_rank() % per_batch;
    const std::int64_t g0 = (rest % groups_m) * row_blocks, j0 = (rest / groups_m) * block_n;
    const std::int64_t g1 = g0 + row_blocks < tiles_m ? g0 + row_blocks : tiles_m;
    const int nb = int(N - j0 < block_n ? N - j0 : block_n);
    const int panels_n = int(ceil_div(nb, NR));
    const int level = Tiling::scratch_level;
    Scratch Ap(team.team_scratch(level), std::size_t(MB) * KB);
    Scratch Bp(team.team_scratch(level), std::size_t(KB) * NB);

    for (std::int64_t k0 = 0; k0 < K || k0 == 0; k0 += KB) {
      const int kb = int(K - k0 < KB ? K - k0 : KB);
      const bool first = k0 == 0;
      pack_b(team, Bp, b, j0, nb, k0, kb);
      for (std::int64_t g = g0; g < g1; ++g) {
        const std::int64_t i0 = g * MB;
        const int mb = int(M - i0 < MB ? M - i0 : MB);
        const int panels_m = int(ceil_div(mb, MR));
        pack_a(team, Ap, b, i0, mb, k0, kb);
        team.team_barrier();
        // B panel outer: consecutive micro-tiles of a thread share the B panel.
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, panels_m * panels_n), [&](const int t) {
          const int pi = t % panels_m, pj = t / panels_m;
          Scalar acc[MR][NR];
          const std::int64_t ci = i0 + std::int64_t(pi) * MR, cj = j0 + std::int64_t(pj) * NR;
          const int rows = mb - pi * MR < MR ? mb - pi * MR : MR;
          micro_tile(&Ap(std::int64_t(pi) * KB * MR), &Bp(std::int64_t(pj) * KB * NR), kb, acc);
          const int cols = nb - pj * NR < NR ? nb - pj * NR : NR;
          for (int r = 0; r < rows; ++r) {
            for (int c = 0; c < cols; ++c) {
              auto& out = at(C, b, ci + r, cj + c);
              if (!first)
                out += alpha * acc[r][c];
              else if (beta == Scalar(0))  // never read C: it may hold anything, NaN included
                out = alpha * acc[r][c];
              else
                out = alpha * acc[r][c] + beta * out;
            }
          }
        });
        team.team_barrier();
      }
      if (K == 0) break;
    }
  }
};

template <class Exec, class VA, class VB, class VC>
void gemm_any_rank(const Exec& exec, Trans ta, Trans tb, typename VC::non_const_value_type alpha,
                   VA A, VB B, typename VC::non_const_value_type beta, VC C, const char* label) {
  constexpr int rank = rank_of<VC>;
  static_assert(rank_of<VA> == rank && rank_of<VB> == rank, "A, B and C need the same rank");
  using Functor = Gemm<Exec, VA, VB, VC>;
  const std::int64_t batch = rank == 3 ? std::int64_t(C.extent(0)) : 1;
  const std::int64_t M = C.extent(rank - 2), N = C.extent(rank - 1);
  const std::int64_t K = ta == Trans::yes ? A.extent(rank - 2) : A.extent(rank - 1);
  const std::int64_t am = ta == Trans::yes ? A.extent(rank - 1) : A.extent(rank - 2);
  const std::int64_t bk = tb == Trans::yes ? B.extent(rank - 1) : B.extent(rank - 2);
  const std::int64_t bn = tb == Trans::yes ? B.extent(rank - 2) : B.extent(rank - 1);
  if (am != M || bk != K || bn != N ||
      (rank == 3 && (std::int64_t(A.extent(0)) != batch || std::int64_t(B.extent(0)) != batch)))
    throw std::invalid_argument(std::string(label) + ": operand shapes do not match");
  if (M == 0 || N == 0 || batch == 0) return;
  GemmBlocks blocks = Functor::Tiling::blocks();
  // Even column blocks (768 = 384 + 384, not 512 + 256): teams of equal work.
  const std::int64_t block_n = ceil_div(ceil_div(N, ceil_div(N, blocks.nb)), Functor::NR) * Functor::NR;
  const std::int64_t tiles_n = ceil_div(N, block_n);
  std::int64_t row_blocks = 1, tiles_m = ceil_div(M, blocks.mb);
  if (Functor::Tiling::teams_per_thread > 0) {
    // Host: about teams_per_thread teams per thread. Where the cache's row blocks are too
    // few to go around (a block of L2 holds a whole small matrix), they are cut to each
    // team's share of the rows; where they are many, a team takes several in a row.
    const std::int64_t want = std::int64_t(Functor::Tiling::teams_per_thread) * exec.concurrency();
    const std::int64_t teams_per_row = batch * tiles_n;
    if (teams_per_row * tiles_m < want) {
      const std::int64_t share = ceil_div(M, ceil_div(want, teams_per_row));
      blocks.mb = int(std::min<std::int64_t>(blocks.mb, ceil_div(share, Functor::MR) * Functor::MR));
      tiles_m = ceil_div(M, blocks.mb);
    }
    // Even row blocks and slices, as the column blocks: 2048 rows as 6 x 294 + 284, not
    // 6 x 336 + 32; 1000 deep as 5 x 167 + 165, not 5 x 192 + 40.
    blocks.mb = int(ceil_div(ceil_div(M, tiles_m), Functor::MR) * Functor::MR);
    tiles_m = ceil_div(M, blocks.mb);
    if (K > 0) blocks.kb = int(ceil_div(K, ceil_div(K, blocks.kb)));
    const std::int64_t groups = std::min(tiles_m, std::max<std::int64_t>(1, ceil_div(want, teams_per_row)));
    row_blocks = ceil_div(tiles_m, groups);
  }
  Functor f{A, B, C, alpha, beta, ta == Trans::yes, tb == Trans::yes, M, N, K, tiles_m, tiles_n,
            blocks.mb, blocks.nb, blocks.kb, row_blocks, block_n};
  const std::int64_t teams = batch * ceil_div(tiles_m, row_blocks) * tiles_n;
  Kokkos::TeamPolicy<Exec> policy(exec, int(teams), Functor::Tiling::team_size(blocks));
  policy.set_scratch_size(Functor::Tiling::scratch_level, Kokkos::PerTeam(f.scratch_bytes()));
  Kokkos::parallel_for(label, policy, f);
}

}  // namespace detail

// C = alpha op(A) op(B) + beta C on rank-2 Views. With beta == 0, C is never read.
template <class Exec, class VA, class VB, class VC>
void gemm(const Exec& exec, Trans ta, Trans tb, typename VC::non_const_value_type alpha, VA A,
          VB B, typename VC::non_const_value_type beta, VC C) {
  static_assert(rank_of<VC> == 2, "gemm takes rank-2 Views; gemm_batched takes rank 3");
  detail::gemm_any_rank(exec, ta, tb, alpha, A, B, beta, C, "sextant::gemm");
}

// C[b] = alpha op(A[b]) op(B[b]) + beta C[b] for every b, on rank-3 Views.
template <class Exec, class VA, class VB, class VC>
void gemm_batched(const Exec& exec, Trans ta, Trans tb, typename VC::non_const_value_type alpha,
                  VA A, VB B, typename VC::non_const_value_type beta, VC C) {
  static_assert(rank_of<VC> == 3, "gemm_batched takes rank-3 Views (batch, rows, columns)");
  detail::gemm_any_rank(exec, ta, tb, alpha, A, B, beta, C, "sextant::gemm_batched");
}

}  // namespace sextant::kernels
