#pragma once
// The vector ISA this translation unit is compiled for (SEXTANT_ISA, or whatever -march
// the build was given), read from the compiler's predefined macros: the width of a
// vector register and how many the register file holds. Register tiles and
// accumulator counts are sized from these, so a build for another CPU derives its own
// instead of inheriting the constants of the host they were first tuned on; what the
// ISA leaves open (how many chains a core's FMA pipes need in flight) is swept at run
// time by the suite.
//
// 512-bit ISAs assume the build also asked for 512-bit vectors
// (-mprefer-vector-width=512, which SEXTANT_ISA adds); the run-time sweep still finds
// the best accumulator count if it did not.
#include <algorithm>
#include <type_traits>
#include <vector>

namespace sextant::kernels::isa {

#if defined(__AVX512F__)
inline constexpr int vector_bytes = 64;
inline constexpr int vector_registers = 32;
inline constexpr const char* name = "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
inline constexpr int vector_bytes = 32;
inline constexpr int vector_registers = 16;
inline constexpr const char* name = "avx2+fma";
#elif defined(__AVX__)
inline constexpr int vector_bytes = 32;
inline constexpr int vector_registers = 16;
inline constexpr const char* name = "avx";
#elif defined(__aarch64__)
inline constexpr int vector_bytes = 16;  // NEON (SVE's width is a run-time property)
inline constexpr int vector_registers = 32;
inline constexpr const char* name = "neon";
#elif defined(__SSE2__)
inline constexpr int vector_bytes = 16;
inline constexpr int vector_registers = 16;
inline constexpr const char* name = "sse2";
#else
inline constexpr int vector_bytes = 8;
inline constexpr int vector_registers = 16;
inline constexpr const char* name = "scalar";
#endif

// Elements of Scalar in one vector register.
template <class Scalar>
inline constexpr int lanes = std::max(1, vector_bytes / int(sizeof(Scalar)));

// Explicit vectors (GCC/Clang vector extensions) for register-tiled host loops, where
// the auto-vectoriser cannot be trusted to keep a tile of accumulators in registers
// (GCC 12 turns a 6 x 8 float64 AVX2 tile into 128-bit operations that spill). Only
// in host passes of compilers that have them; elsewhere kernels keep their plain loops.
#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__) && !defined(__SYCL_DEVICE_ONLY__)
#define SEXTANT_HOST_VECTORS 1
template <class Scalar>
struct Vector {
  typedef Scalar type __attribute__((vector_size(vector_bytes)));
};
template <class Scalar>
inline constexpr bool has_vector = std::is_floating_point_v<Scalar> && lanes<Scalar> > 1;
#endif

// Wider vectors than the build's, for kernels that carry their own target attribute:
// a kernel that measures the machine rather than the build (the peak) must run at the
// width the CPU has, since a vendor BLAS loaded beside it dispatches on the CPU. On
// x86 with GCC or Clang, AVX-512 in a build for less.
#if defined(SEXTANT_HOST_VECTORS) && defined(__x86_64__) && !defined(__AVX512F__)
#define SEXTANT_HOST_AVX512_TARGET 1
inline constexpr int avx512_bytes = 64;
#endif

// Vector widths (bytes) this process can run host kernels at, narrowest first: the
// build's, then any wider one the CPU has (read at run time).
inline std::vector<int> host_vector_widths() {
  std::vector<int> widths{vector_bytes};
#ifdef SEXTANT_HOST_AVX512_TARGET
  if (__builtin_cpu_supports("avx512f")) widths.push_back(avx512_bytes);
#endif
  return widths;
}

// Vector registers of the ISA that has vectors of `bytes` (AVX-512 has 32, AVX2 16).
inline constexpr int registers_at(int bytes) { return bytes >= 64 ? 32 : vector_registers; }

}  // namespace sextant::kernels::isa
