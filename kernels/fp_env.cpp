#include "kernels/fp_env.hpp"

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace sextant::kernels {
namespace {

void flush_on_this_thread() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ (bit 15) | DAZ (bit 6)
#elif defined(__aarch64__)
  std::uint64_t fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  __asm__ volatile("msr fpcr, %0" : : "r"(fpcr | (std::uint64_t{1} << 24)));  // FZ
#endif
}

}  // namespace

const char* flush_subnormals(int host_threads) {
  flush_on_this_thread();
#ifdef _OPENMP
#pragma omp parallel num_threads(host_threads)
  flush_on_this_thread();
#else
  (void)host_threads;
#endif
#if defined(__x86_64__) || defined(__i386__)
  return "flushed to zero (FTZ+DAZ)";
#elif defined(__aarch64__)
  return "flushed to zero (FZ)";
#else
  return "as the platform sets them";
#endif
}

}  // namespace sextant::kernels
