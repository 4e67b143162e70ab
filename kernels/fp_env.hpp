#pragma once
// The floating-point environment every sextant measurement runs in: subnormal results
// flushed to zero (FTZ) and subnormal operands read as zero (DAZ), on the calling thread
// and on every thread of the host execution space. One subnormal operand or result
// costs a CPU core a microcode assist (~100 cycles): AdamW on 930k float32 elements ran
// 40x slower with g = 1e-20 (g*g subnormal) than with g = 1e-3, and the vectorised
// bias+GELU 9x slower without FTZ (a blended lane's intermediate underflows). Training
// drives gradients and moments towards such values; GPUs flush by default, and so does
// sextant, so that a kernel's time depends on its shape, not on how small its values
// happen to be. Whatever times a kernel (the suites, the yardsticks) calls this first.
namespace sextant::kernels {

// Call after Kokkos is initialised; host_threads is the host execution space's thread
// count. Returns what was set, in words (for the provenance).
const char* flush_subnormals(int host_threads);

}  // namespace sextant::kernels
