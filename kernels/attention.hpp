#pragma once
// Scaled dot-product attention, unfused, per batch-head b (rows of Q are queries):
//   forward  S = scale Q K^T,  P = softmax_rows(S),  O = P V
//   backward dV = P^T dO,  dP = dO V^T,  dS = softmax_backward(P, dP),
//            dQ = scale dS K,  dK = scale dS^T Q
// Q, dQ, O, dO: (BH, Lq, D); K, V, dK, dV: (BH, Lk, D); P and the backward's dP
// workspace: (BH, Lq, Lk). P is the forward's output kept for the backward pass, as
// frameworks do without recomputation. Built from gemm_batched and the row softmax,
// each step its own launch (this is the unfused baseline a fused kernel is measured
// against).
//
// Counted FLOPs: forward 4 BH Lq Lk D (two GEMMs) + 5 BH Lq Lk (softmax); backward
// 8 BH Lq Lk D (four GEMMs) + 4 BH Lq Lk (softmax backward).
// Bytes: every step's operands moved once, so the materialised score matrix counts each
// time a step reads or writes it: forward BH (2 Lq D + 2 Lk D + 4 Lq Lk) scalars
// (Q, K, V read, O written; S written, read and written by softmax, read by P V);
// backward BH (4 Lq D + 4 Lk D + 7 Lq Lk).
#include <cstdint>
#include <stdexcept>

#include "kernels/common.hpp"
#include "kernels/counts.hpp"
#include "kernels/gemm.hpp"
#include "kernels/softmax.hpp"

namespace sextant::kernels {

namespace detail {
// A contiguous rank-3 View seen as (dim0 * dim1) x dim2 rows.
template <class V>
auto rows_of(const V& v) {
  using Scalar = typename V::value_type;
  return Kokkos::View<Scalar**, Kokkos::LayoutRight, typename V::memory_space, Kokkos::MemoryUnmanaged>(
      v.data(), v.extent(0) * v.extent(1), v.extent(2));
}
}  // namespace detail

template <class Exec, class VQ, class VK, class VV, class VP, class VO>
void attention_forward(const Exec& exec, VQ q, VK k, VV v, VP p, VO o,
                       typename VO::non_const_value_type scale) {
  using Scalar = typename VO::non_const_value_type;
  if (p.extent(0) != q.extent(0) || p.extent(1) != q.extent(1) || p.extent(2) != k.extent(1) ||
      v.extent(1) != k.extent(1) || o.extent(1) != q.extent(1) || o.extent(2) != v.extent(2))
    throw std::invalid_argument("sextant::attention_forward: shapes do not match");
  gemm_batched(exec, Trans::no, Trans::yes, scale, q, k, Scalar(0), p);
  auto rows = detail::rows_of(p);
  softmax_forward(exec, rows, rows);
  gemm_batched(exec, Trans::no, Trans::no, Scalar(1), p, v, Scalar(0), o);
}

// dp is workspace (BH, Lq, Lk); on return it holds dS.
template <class Exec, class VQ, class VK, class VV, class VP, class VDO, class VDP, class VDQ,
          class VDK, class VDV>
void attention_backward(const Exec& exec, VQ q, VK k, VV v, VP p, VDO dout, VDP dp, VDQ dq,
                        VDK dk, VDV dv, typename VDQ::non_const_value_type scale) {
  using Scalar = typename VDQ::non_const_value_type;
  if (dp.extent(0) != p.extent(0) || dp.extent(1) != p.extent(1) || dp.extent(2) != p.extent(2))
    throw std::invalid_argument("sextant::attention_backward: dP workspace must match P");
  gemm_batched(exec, Trans::yes, Trans::no, Scalar(1), p, dout, Scalar(0), dv);
  gemm_batched(exec, Trans::no, Trans::yes, Scalar(1), dout, v, Scalar(0), dp);
  auto p_rows = detail::rows_of(p);
  auto dp_rows = detail::rows_of(dp);
  softmax_backward(exec, p_rows, dp_rows, dp_rows);
  gemm_batched(exec, Trans::no, Trans::no, scale, dp, k, Scalar(0), dq);
  gemm_batched(exec, Trans::yes, Trans::no, scale, dp, q, Scalar(0), dk);
}

}  // namespace sextant::kernels
