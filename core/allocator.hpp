#pragma once
// What the process's allocator does with memory it is given back, fixed before anything
// is measured.
//
// glibc's malloc serves a block of 128 KiB or more from a fresh mapping and unmaps it on
// free, and gives the heap's free top back to the system past a trim threshold; each
// later block of that size then faults its pages in again. Its thresholds rise once a
// large block has been freed, so what one call costs depends on what the process did
// before. MPICH allocates a reduction's temporary per call: a 2-rank reduce-scatter of
// 96 KiB blocks took 30x longer in a fresh process than after one 4 MiB call had raised
// the thresholds (docs/comm-suite.md). Frameworks keep freed memory (caching allocators)
// and long jobs reach raised thresholds anyway: sextant sets them at start, so every
// benchmark and every training step meets the same allocator.
#include <string>

namespace sextant {

// Keeps freed blocks up to 32 MiB (glibc's own ceiling for its rising threshold) in the
// process: mmap threshold 32 MiB, trim threshold 64 MiB. Leaves the allocator as it is
// where the environment configures it (MALLOC_*_ variables, GLIBC_TUNABLES with
// glibc.malloc) or where it is not glibc's (a sanitizer's). Returns what holds, for the
// provenance's `allocator` field.
std::string keep_freed_memory();

}  // namespace sextant
