#pragma once
// bfloat16: float32's sign, exponent and top 7 mantissa bits, the upper half of its
// bits. Gradients sent in it (the training proxy's compress=bf16) keep float32's range,
// so no loss scaling is needed, at 8 significant bits: half the bytes on the wire.
// Rounding to nearest, ties to even (what hardware conversions do); a NaN stays a NaN.
// Plain functions usable inside device kernels (KOKKOS_INLINE_FUNCTION where Kokkos is
// present) and in the MPI reduction (suites/common/mpi.hpp). __builtin_memcpy: the bit
// copy every host and device compiler of the stack has.
#include <cstdint>

#if defined(KOKKOS_INLINE_FUNCTION)
#define SEXTANT_BF16_FUNCTION KOKKOS_INLINE_FUNCTION
#else
#define SEXTANT_BF16_FUNCTION inline
#endif

namespace sextant::bf16 {

SEXTANT_BF16_FUNCTION std::uint16_t from_float(float x) {
  std::uint32_t bits;
  __builtin_memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((bits >> 16) | 0x0040u);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);  // to nearest, ties to the even upper half
  return std::uint16_t(bits >> 16);
}

SEXTANT_BF16_FUNCTION float to_float(std::uint16_t h) {
  const std::uint32_t bits = std::uint32_t(h) << 16;
  float x;
  __builtin_memcpy(&x, &bits, sizeof x);
  return x;
}

}  // namespace sextant::bf16
