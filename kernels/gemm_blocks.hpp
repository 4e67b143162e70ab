#pragma once
// The host GEMM's cache blocks, derived at run time from the caches of the CPU it runs
// on (BLIS's analytical model, Low et al. 2016, in its simple form): a block size tuned
// on one host thrashes another's cache. The register micro-tile (MR x NR) comes from
// the ISA the build targets (kernels/isa.hpp); the three block sizes come from here:
//
//   kb  the depth of a packed slice. The kb x NR micro-panel of B is reused from L1
//       across every micro-panel of A in the block while A's kb x MR micro-panels
//       stream past it: the B micro-panel fills L1d, and kb is at most 256 (deeper, the
//       C tile's update is already under 1% of a micro-tile's work; measured flat
//       from 256 to 768 with AVX2 tiles on a 48 KiB L1d).
//   nb  the columns of a packed B block. A team re-reads the whole block once per row
//       block it computes: it takes three quarters of L2.
//   mb  the rows of a packed A block, re-read once per B micro-panel: an eighth of L2
//       (with the B block, the level is full; C's tiles pass through).
// Sized from L1 and L2, the levels a core owns: the shared level's share is what a VM
// reports least reliably (hundreds of MiB at times), and BLIS's use of it (the B block)
// is taken by L2 here.
//
// The caches are the process's (set_host_caches, from core/machine's reading of the OS,
// by whoever starts Kokkos); where none were set or the OS reported none, the smallest
// of current server cores (L1d 32 KiB, L2 512 KiB), so blocks that fit there fit
// anywhere. SEXTANT_GEMM_BLOCKS=MB,NB,KB overrides the derivation (0 keeps a derived
// value): for tuning by hand, and recorded like the derived ones.
#include <string>

namespace sextant::kernels {

struct HostCaches {
  long long l1d_bytes = 0;  // per core; 0: unknown
  long long l2_bytes = 0;   // per core (the largest private level); 0: unknown
};

// The caches the host GEMM blocks for. Not thread-safe against concurrent GEMMs: set
// once at start-up, before any kernel runs.
void set_host_caches(const HostCaches& caches);
HostCaches host_caches();

struct GemmBlocks {
  int mb = 0, nb = 0, kb = 0;
  std::string source;  // "caches", "assumed caches" (none known), or "SEXTANT_GEMM_BLOCKS"
};

// The blocks for a micro-tile of mr x nr elements of scalar_bytes each: kb a multiple of
// 8 in [16, 256], mb a multiple of mr, nb of nr, each at least one micro-tile. Pure:
// the same caches give the same blocks on every host.
GemmBlocks derive_gemm_blocks(const HostCaches& caches, int mr, int nr, int scalar_bytes);

// What the host GEMM uses: derived from host_caches(), then SEXTANT_GEMM_BLOCKS applied
// (a malformed value is an error naming it: std::invalid_argument).
GemmBlocks host_gemm_blocks(int mr, int nr, int scalar_bytes);

}  // namespace sextant::kernels
