#pragma once
// What the descriptors share: the execution space they run on, host copies of Views as
// doubles, NaN poisoning, comparison with a reference, and the dtype dispatch.
#include <Kokkos_Core.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/reference/bounds.hpp"
#include "kernels/registry.hpp"

// Half-precision types exist as their own types only on some backends (e.g. CUDA); on
// the host they alias float and are not measured.
#if defined(KOKKOS_HALF_T_IS_FLOAT) && !KOKKOS_HALF_T_IS_FLOAT
#define SEXTANT_HAVE_FLOAT16 1
#endif
#if defined(KOKKOS_BHALF_T_IS_FLOAT) && !KOKKOS_BHALF_T_IS_FLOAT
#define SEXTANT_HAVE_BFLOAT16 1
#endif

namespace sextant::kernels::descriptors {

using Exec = Kokkos::DefaultExecutionSpace;

std::vector<KernelInfo> stream_kernels();
std::vector<KernelInfo> peak_kernels();
std::vector<KernelInfo> gemm_kernels();
std::vector<KernelInfo> conv_kernels();
std::vector<KernelInfo> activation_kernels();
std::vector<KernelInfo> normalization_kernels();
std::vector<KernelInfo> attention_kernels();
std::vector<KernelInfo> embedding_kernels();
std::vector<KernelInfo> optimizer_kernels();  // reduction and AdamW

template <class Scalar>
double as_double(Scalar x) {
  if constexpr (std::is_arithmetic_v<Scalar>)
    return static_cast<double>(x);
  else
    return static_cast<double>(static_cast<float>(x));  // half types convert through float
}

template <class Scalar>
double unit_roundoff() {
  if constexpr (std::is_same_v<Scalar, double>) return 0x1.0p-53;
  if constexpr (std::is_same_v<Scalar, float>) return 0x1.0p-24;
#ifdef SEXTANT_HAVE_FLOAT16
  if constexpr (std::is_same_v<Scalar, Kokkos::Experimental::half_t>) return 0x1.0p-11;
#endif
#ifdef SEXTANT_HAVE_BFLOAT16
  if constexpr (std::is_same_v<Scalar, Kokkos::Experimental::bhalf_t>) return 0x1.0p-8;
#endif
  return 0x1.0p-24;
}

// A contiguous View's elements on the host, as doubles, in row-major order.
template <class V>
std::vector<double> to_host(const V& v) {
  auto h = Kokkos::create_mirror_view(v);
  Kokkos::deep_copy(h, v);
  std::vector<double> out(h.span());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = as_double(h.data()[i]);
  return out;
}

template <class V>
std::vector<std::int64_t> indices_to_host(const V& v) {
  auto h = Kokkos::create_mirror_view(v);
  Kokkos::deep_copy(h, v);
  return std::vector<std::int64_t>(h.data(), h.data() + h.span());
}

// Fill an output with NaN so that an element the kernel fails to write is caught.
template <class V>
void poison(const V& v) {
  using Scalar = typename V::non_const_value_type;
  Kokkos::deep_copy(v, static_cast<Scalar>(std::numeric_limits<float>::quiet_NaN()));
}

// Checks that every element of `got` is finite, and that each element the reference
// computed lies within its bound.
inline void compare(Validation& v, const std::string& what, const std::vector<double>& got,
                    const reference::Bounded& ref) {
  auto report = [&](std::size_t flat, double value, const double* expect, double bound) {
    ++v.wrong;
    v.ok = false;
    if (v.message.empty()) {
      std::ostringstream s;
      s.precision(17);
      s << what << "[" << flat << "] = " << value;
      if (expect)
        s << ", reference " << *expect << " +- " << bound;
      else
        s << " (not written, or not finite)";
      v.message = s.str();
    }
  };
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!std::isfinite(got[i])) report(i, got[i], nullptr, 0);
  v.written_checked += got.size();
  for (std::size_t k = 0; k < ref.size(); ++k) {
    const std::size_t flat = ref.flat_index(k);
    if (flat >= got.size()) throw std::logic_error("reference index outside " + what);
    const double diff = std::abs(got[flat] - ref.value[k]);
    if (!std::isfinite(got[flat])) continue;  // already counted
    if (diff > ref.bound[k]) {
      report(flat, got[flat], &ref.value[k], ref.bound[k]);
      v.worst = std::max(v.worst, ref.bound[k] > 0 ? diff / ref.bound[k] : INFINITY);
    } else if (ref.bound[k] > 0) {
      v.worst = std::max(v.worst, diff / ref.bound[k]);
    }
  }
  v.compared += ref.size();
}

// make() for kernels instantiated for float64 and float32 (Inst<double>, Inst<float>).
template <template <class> class Inst>
std::unique_ptr<Instance> make_real(const Shape& shape, Dtype dtype, std::uint64_t seed) {
  switch (dtype) {
    case Dtype::float64: return std::make_unique<Inst<double>>(shape, seed);
    case Dtype::float32: return std::make_unique<Inst<float>>(shape, seed);
    default: break;
  }
  throw std::invalid_argument("kernel has no " + std::string(to_string(dtype)) + " version");
}

inline const std::vector<Dtype> real_dtypes = {Dtype::float64, Dtype::float32};

// The number of elements a shape's parameters multiply to (for byte/FLOP counts).
inline double prod(const Shape& s, std::initializer_list<const char*> names) {
  double p = 1;
  for (const char* n : names) p *= double(s[n]);
  return p;
}

// Work budget of a reference check (multiply-adds): beyond it, rows are sampled.
inline constexpr double reference_budget = double(1 << 25);

}  // namespace sextant::kernels::descriptors
