#pragma once
// The vendor path for dense operators: GEMM and batched GEMM through Kokkos Kernels'
// KokkosBlas::gemm, which dispatches to the BLAS TPL it was built with (OpenBLAS or
// MKL on the host, cuBLAS or rocBLAS on devices): what frameworks call. Same
// interface, Views and counts as kernels/gemm.hpp (the portable path), so descriptors
// and the training proxy choose a path without changing anything else.
//
// Only where Kokkos Kernels was found (SEXTANT_HAVE_KOKKOS_KERNELS). Batched GEMM is a
// loop of GEMMs over the batch, each threaded by the library (Kokkos Kernels 3.4 has no
// batched TPL call on the host).
#include <KokkosBlas3_gemm.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/common.hpp"
#include "kernels/gemm.hpp"

namespace sextant::kernels {

namespace detail {
inline const char* blas_trans(Trans t) { return t == Trans::yes ? "T" : "N"; }
}  // namespace detail

// C = alpha op(A) op(B) + beta C on rank-2 Views, by the vendor's BLAS.
template <class Exec, class VA, class VB, class VC>
void vendor_gemm(const Exec& exec, Trans ta, Trans tb, typename VC::non_const_value_type alpha, VA A, VB B,
                 typename VC::non_const_value_type beta, VC C) {
  static_assert(rank_of<VC> == 2, "vendor_gemm takes rank-2 Views; vendor_gemm_batched takes rank 3");
  exec.fence();  // Kokkos Kernels 3.4 runs on the default instance, not on exec
  if (C.extent(0) == 0 || C.extent(1) == 0) return;
  KokkosBlas::gemm(detail::blas_trans(ta), detail::blas_trans(tb), alpha, A, B, beta, C);
}

// C[b] = alpha op(A[b]) op(B[b]) + beta C[b] for every b, on rank-3 Views.
template <class Exec, class VA, class VB, class VC>
void vendor_gemm_batched(const Exec& exec, Trans ta, Trans tb, typename VC::non_const_value_type alpha, VA A,
                         VB B, typename VC::non_const_value_type beta, VC C) {
  static_assert(rank_of<VC> == 3, "vendor_gemm_batched takes rank-3 Views (batch, rows, columns)");
  if (A.extent(0) != C.extent(0) || B.extent(0) != C.extent(0))
    throw std::invalid_argument("vendor_gemm_batched: operand batch sizes do not match");
  for (std::size_t b = 0; b < C.extent(0); ++b)
    vendor_gemm(exec, ta, tb, alpha, Kokkos::subview(A, b, Kokkos::ALL, Kokkos::ALL),
                Kokkos::subview(B, b, Kokkos::ALL, Kokkos::ALL), beta,
                Kokkos::subview(C, b, Kokkos::ALL, Kokkos::ALL));
}

}  // namespace sextant::kernels
