#pragma once
// Peak floating-point rate: each work item runs `chains` independent multiply-add
// recurrences x <- x * a + b for `reps` steps (ERT's kernel shape). Independence is
// what fills the pipelines: a core needs (FMA pipes x FMA latency) vector FMAs in
// flight, a number the ISA does not tell (2 x 4 on most x86 cores, more on others),
// and past the register file's size the accumulators spill. So the chain count is a
// parameter, `vectors` accumulators of one vector register each (a GPU thread's
// "vector" is one scalar, its warp-mates supply the rest), and the suite sweeps it and
// keeps the fastest. With a < 1 the recurrence contracts to b / (1 - a), so values
// stay normal.
//
// On the host the register width is a parameter too (`bits`): the build's, and any
// wider one the CPU has (kernels/isa.hpp), each in a function compiled for its own
// ISA. The ceiling is the machine's, not the build's: an AVX2 build on an AVX-512 core
// still loads a BLAS that runs AVX-512, and a ceiling below a real kernel's rate is a
// wrong ceiling.
//
// Counted: 2 FLOPs per multiply-add (chains * reps * items * 2). Bytes: the one result
// per work item written (negligible; the kernel is compute-bound by construction).
// Compiled with contraction allowed (GCC's default for C++), x * a + b is one FMA.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/isa.hpp"

namespace sextant::kernels {

// Accumulator counts the kernel is compiled for; peak_vector_counts picks those worth
// sweeping on a backend.
inline constexpr int peak_vector_candidates[] = {1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32};

// Host: from 4 vectors (one pipe's latency) up to the register file of the ISA with
// vectors of `bytes`; GPU: 1 to 8 scalars per thread.
template <class Exec>
std::vector<int> peak_vector_counts(int bytes = isa::vector_bytes) {
  std::vector<int> out;
  for (int v : peak_vector_candidates)
    if (runs_on_host<Exec> ? v >= 4 && v <= isa::registers_at(bytes) : v <= 8) out.push_back(v);
  return out;
}

// Vector widths in bits the peak is measured at: on the host every width the CPU runs
// (the build's first); on a device one "vector" is a thread's scalar, and no width is
// swept (0).
template <class Exec>
std::vector<int> peak_vector_bits() {
  if constexpr (!runs_on_host<Exec>) return {0};
  std::vector<int> bits;
  for (int bytes : isa::host_vector_widths()) bits.push_back(8 * bytes);
  return bits;
}

// The recurrence's constants and starting values, shared with the reference.
struct PeakConstants {
  static constexpr double a = 0.999;
  static constexpr double b = 0.001;
  KOKKOS_INLINE_FUNCTION static double start(std::int64_t item, int chain) {
    return 0.5 + 0.0078125 * chain + 0.001 * static_cast<double>(item % 61);
  }
};

// Chains per work item: `vectors` registers of `bits` (host) or scalars (device).
template <class Exec, class Scalar>
inline constexpr int peak_chains(int vectors, int bits) {
  if constexpr (!runs_on_host<Exec>) return vectors;
  return vectors * std::max(1, bits / 8 / int(sizeof(Scalar)));
}

template <class Exec, class Scalar>
inline constexpr double peak_flops(double items, double reps, int vectors, int bits) {
  return 2.0 * peak_chains<Exec, Scalar>(vectors, bits) * reps * items;
}

namespace detail {

template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar peak_constant(double x) {
  return static_cast<Scalar>(static_cast<float>(x));
}

// out(i) = sum over chains of the chain's value after `reps` steps, the chains as
// scalars: the device path, and the host's for scalars without vector types.
template <int Chains, class Exec, class VOut>
void peak_fma_chains(const Exec& exec, VOut out, int reps) {
  using Scalar = typename VOut::non_const_value_type;
  Kokkos::parallel_for(
      "sextant::peak_fma", Kokkos::RangePolicy<Exec>(exec, 0, out.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t item) {
        const Scalar a = peak_constant<Scalar>(PeakConstants::a);
        const Scalar b = peak_constant<Scalar>(PeakConstants::b);
        Scalar x[Chains];
        for (int j = 0; j < Chains; ++j) x[j] = peak_constant<Scalar>(PeakConstants::start(item, j));
        for (int r = 0; r < reps; ++r)
          for (int j = 0; j < Chains; ++j) x[j] = x[j] * a + b;
        Scalar sum = static_cast<Scalar>(0.0f);
        for (int j = 0; j < Chains; ++j) sum += x[j];
        out(item) = sum;
      });
}

#ifdef SEXTANT_HOST_VECTORS
// One work item's chains as `Vectors` explicit vector registers of `Bytes` (chain j in
// lane j % lanes of register j / lanes), summed in chain order as the scalar path and
// the reference sum them. Inlined into a function compiled for the width's ISA.
template <int Bytes, int Vectors, class Scalar>
[[gnu::always_inline]] inline Scalar peak_item(std::int64_t item, int reps) {
  typedef Scalar V __attribute__((vector_size(Bytes)));
  constexpr int lanes = Bytes / int(sizeof(Scalar));
  V x[Vectors];
  for (int v = 0; v < Vectors; ++v)
    for (int l = 0; l < lanes; ++l) x[v][l] = peak_constant<Scalar>(PeakConstants::start(item, v * lanes + l));
  const V a = V{} + peak_constant<Scalar>(PeakConstants::a);
  const V b = V{} + peak_constant<Scalar>(PeakConstants::b);
  for (int r = 0; r < reps; ++r)
    for (int v = 0; v < Vectors; ++v) x[v] = x[v] * a + b;
  Scalar sum = 0;
  for (int v = 0; v < Vectors; ++v)
    for (int l = 0; l < lanes; ++l) sum += x[v][l];
  return sum;
}

template <class Scalar>
using PeakItem = Scalar (*)(std::int64_t item, int reps);

template <int Vectors, class Scalar>
[[gnu::noinline]] Scalar peak_item_build_width(std::int64_t item, int reps) {
  return peak_item<isa::vector_bytes, Vectors, Scalar>(item, reps);
}

#ifdef SEXTANT_HOST_AVX512_TARGET
template <int Vectors, class Scalar>
[[gnu::noinline, gnu::target("avx512f")]] Scalar peak_item_avx512(std::int64_t item, int reps) {
  return peak_item<isa::avx512_bytes, Vectors, Scalar>(item, reps);
}
#endif

// The item function for (bytes, vectors), or null where none is compiled.
template <class Scalar, std::size_t... I>
PeakItem<Scalar> peak_item_for(int bytes, int vectors, std::index_sequence<I...>) {
  PeakItem<Scalar> found = nullptr;
  auto pick = [&](int v, PeakItem<Scalar> build, PeakItem<Scalar> wide) {
    if (v != vectors) return;
    if (bytes == isa::vector_bytes) found = build;
#ifdef SEXTANT_HOST_AVX512_TARGET
    else if (bytes == isa::avx512_bytes && __builtin_cpu_supports("avx512f"))
      found = wide;
#endif
  };
#ifdef SEXTANT_HOST_AVX512_TARGET
  (pick(peak_vector_candidates[I], &peak_item_build_width<peak_vector_candidates[I], Scalar>,
        &peak_item_avx512<peak_vector_candidates[I], Scalar>),
   ...);
#else
  (pick(peak_vector_candidates[I], &peak_item_build_width<peak_vector_candidates[I], Scalar>, nullptr), ...);
#endif
  return found;
}
#endif

template <class Exec, class VOut, std::size_t... I>
bool peak_fma_dispatch(const Exec& exec, VOut out, int reps, int vectors, int bits, std::index_sequence<I...> seq) {
  using Scalar = typename VOut::non_const_value_type;
#ifdef SEXTANT_HOST_VECTORS
  if constexpr (runs_on_host<Exec> && isa::has_vector<Scalar>) {
    const auto item_fn = peak_item_for<Scalar>(bits / 8, vectors, seq);
    if (item_fn == nullptr) return false;
    Kokkos::parallel_for(
        "sextant::peak_fma", Kokkos::RangePolicy<Exec>(exec, 0, out.extent(0)),
        [=](const std::int64_t item) { out(item) = item_fn(item, reps); });
    return true;
  } else
#endif
  {
    (void)seq;
    if (runs_on_host<Exec> && bits != 8 * isa::vector_bytes) return false;
    constexpr int lanes = runs_on_host<Exec> ? isa::lanes<Scalar> : 1;
    return ((vectors == peak_vector_candidates[I]
                 ? (peak_fma_chains<peak_vector_candidates[I] * lanes>(exec, out, reps), true)
                 : false) ||
            ...);
  }
}

}  // namespace detail

// Runs the recurrences with `vectors` accumulators (one of peak_vector_candidates) of
// `bits` each per work item (host: one of peak_vector_bits; device: ignored).
template <class Exec, class VOut>
void peak_fma(const Exec& exec, VOut out, int reps, int vectors, int bits) {
  constexpr std::size_t n = sizeof(peak_vector_candidates) / sizeof(peak_vector_candidates[0]);
  if (!detail::peak_fma_dispatch(exec, out, reps, vectors, bits, std::make_index_sequence<n>{}))
    throw std::invalid_argument("peak_fma: vectors=" + std::to_string(vectors) + ",bits=" + std::to_string(bits) +
                                " is not a register count and width it is compiled for and this CPU runs");
}

}  // namespace sextant::kernels
