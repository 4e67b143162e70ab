#pragma once
// View types of the proxy, and the small helpers every part uses. Everything lives in the
// default execution space's memory; MPI is handed View data directly (on a GPU backend
// that needs a GPU-aware MPI).
#include <mpi.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace sextant::train {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

template <class S>
using V1 = Kokkos::View<S*, Kokkos::LayoutRight, Mem>;
template <class S>
using V2 = Kokkos::View<S**, Kokkos::LayoutRight, Mem>;
template <class S>
using V3 = Kokkos::View<S***, Kokkos::LayoutRight, Mem>;
// Windows into larger allocations (parameters in the flat buffer, q/k/v in one block).
template <class S>
using U1 = Kokkos::View<S*, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged>;
template <class S>
using U2 = Kokkos::View<S**, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged>;
template <class S>
using U3 = Kokkos::View<S***, Kokkos::LayoutRight, Mem, Kokkos::MemoryUnmanaged>;
using Tokens = Kokkos::View<std::int32_t*, Kokkos::LayoutRight, Mem>;  // int32, as the kernel registry

// A contiguous View of any rank as one vector.
template <class V>
U1<typename V::value_type> flat(const V& v) {
  return U1<typename V::value_type>(v.data(), v.span());
}

template <class S>
V2<S> alloc2(const std::string& label, std::int64_t r, std::int64_t c) {
  return V2<S>(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), r, c);
}
template <class S>
V1<S> alloc1(const std::string& label, std::int64_t n) {
  return V1<S>(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), n);
}

template <class S>
MPI_Datatype mpi_type() {
  static_assert(std::is_same_v<S, float> || std::is_same_v<S, double>, "float32 or float64");
  return std::is_same_v<S, double> ? MPI_DOUBLE : MPI_FLOAT;
}

// Its name as the configuration's dtype and the compute model's.
template <class S>
std::string dtype_name() {
  static_assert(std::is_same_v<S, float> || std::is_same_v<S, double>, "float32 or float64");
  return std::is_same_v<S, double> ? "float64" : "float32";
}

}  // namespace sextant::train
