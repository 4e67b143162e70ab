#pragma once
// 2-D convolution, forward, NCHW (cross-correlation, as DL frameworks define it):
//   y(n, k, oh, ow) = sum_{c, r, s} w(k, c, r, s) x(n, c, oh*stride - pad + r, ow*stride - pad + s)
// with zero padding; OH = (H + 2 pad - R) / stride + 1, likewise OW.
//
// conv2d_forward lowers to GEMM (im2col): one launch unfolds every input window into a
// workspace column, cols(n, (c R + r) S + s, oh OW + ow), zero where the window hangs
// into the padding; then per image y(n) = W cols(n) with W the (K, C R S) weights, on
// the tiled GEMM. The workspace (N, C R S, OH OW) is the caller's (conv2d_workspace).
// conv2d_forward_direct needs none: each work item computes a strip of conv_strip
// consecutive outputs of one row in registers (vectorisable for stride 1); it is the
// simple portable form, several times slower on a CPU.
//
// Counted: 2 N K OH OW C R S FLOPs (multiply-adds over the padded window; taps that fall
// in the padding are counted too, as cuDNN and the roofline literature do). Bytes:
// compulsory traffic, x, w and y moved once each (the workspace traffic is not counted).
#include <cstdint>
#include <stdexcept>

#include "kernels/common.hpp"
#include "kernels/gemm.hpp"

namespace sextant::kernels {

struct Conv2dShape {
  std::int64_t N = 1, C = 1, H = 1, W = 1, K = 1, R = 1, S = 1, stride = 1, pad = 0;
  KOKKOS_INLINE_FUNCTION constexpr std::int64_t OH() const { return (H + 2 * pad - R) / stride + 1; }
  KOKKOS_INLINE_FUNCTION constexpr std::int64_t OW() const { return (W + 2 * pad - S) / stride + 1; }
};

inline constexpr double conv2d_flops(const Conv2dShape& s) {
  return 2.0 * s.N * s.K * s.OH() * s.OW() * s.C * s.R * s.S;
}

inline constexpr double conv2d_bytes(const Conv2dShape& s, double scalar_bytes) {
  return (double(s.N) * s.C * s.H * s.W + double(s.K) * s.C * s.R * s.S +
          double(s.N) * s.K * s.OH() * s.OW()) * scalar_bytes;
}

inline constexpr int conv_strip = 16;

namespace detail {
template <class VX, class VW, class VY>
Conv2dShape conv2d_check(const VX& x, const VW& w, const VY& y, int stride, int pad) {
  static_assert(rank_of<VX> == 4 && rank_of<VW> == 4 && rank_of<VY> == 4, "NCHW Views");
  Conv2dShape s{std::int64_t(x.extent(0)), std::int64_t(x.extent(1)), std::int64_t(x.extent(2)),
                std::int64_t(x.extent(3)), std::int64_t(w.extent(0)), std::int64_t(w.extent(2)),
                std::int64_t(w.extent(3)), stride, pad};
  if (stride < 1 || pad < 0 || s.OH() < 1 || s.OW() < 1 || std::int64_t(w.extent(1)) != s.C ||
      std::int64_t(y.extent(0)) != s.N || std::int64_t(y.extent(1)) != s.K ||
      std::int64_t(y.extent(2)) != s.OH() || std::int64_t(y.extent(3)) != s.OW())
    throw std::invalid_argument("sextant::conv2d_forward: shapes do not match");
  return s;
}

// A contiguous View's memory seen as a rows x cols row-major matrix.
template <class V>
auto as_matrix(const V& v, std::int64_t offset, std::int64_t rows, std::int64_t cols) {
  using Scalar = typename V::value_type;
  return Kokkos::View<Scalar**, Kokkos::LayoutRight, typename V::memory_space, Kokkos::MemoryUnmanaged>(
      v.data() + offset, rows, cols);
}
}  // namespace detail

// Workspace for conv2d_forward: (N, C R S, OH OW).
template <class Scalar, class Exec>
View3<Scalar, Exec> conv2d_workspace(const Conv2dShape& s) {
  return View3<Scalar, Exec>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sextant::conv2d_workspace"), s.N,
                             s.C * s.R * s.S, s.OH() * s.OW());
}

template <class Exec, class VX, class VW, class VY, class VC>
void conv2d_forward(const Exec& exec, VX x, VW w, VY y, int stride, int pad, VC cols) {
  using Scalar = typename VY::non_const_value_type;
  const Conv2dShape s = detail::conv2d_check(x, w, y, stride, pad);
  const std::int64_t OH = s.OH(), OW = s.OW(), P = OH * OW, CRS = s.C * s.R * s.S;
  if (std::int64_t(cols.extent(0)) != s.N || std::int64_t(cols.extent(1)) != CRS || std::int64_t(cols.extent(2)) != P)
    throw std::invalid_argument("sextant::conv2d_forward: workspace must be (N, C R S, OH OW)");
  // One work item per (image, window tap, output row): a contiguous run of OW outputs.
  using Policy = Kokkos::MDRangePolicy<Exec, Kokkos::Rank<3>>;
  Kokkos::parallel_for(
      "sextant::conv2d_im2col", Policy(exec, {0, 0, 0}, {s.N, CRS, OH}),
      KOKKOS_LAMBDA(const std::int64_t n, const std::int64_t crs, const std::int64_t oh) {
        const std::int64_t c = crs / (s.R * s.S), r = (crs / s.S) % s.R, q = crs % s.S;
        const std::int64_t ih = oh * s.stride - s.pad + r;
        const std::int64_t p0 = oh * OW;
        if (ih < 0 || ih >= s.H) {
          for (std::int64_t ow = 0; ow < OW; ++ow) cols(n, crs, p0 + ow) = Scalar(0);
          return;
        }
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          const std::int64_t iw = ow * s.stride - s.pad + q;
          cols(n, crs, p0 + ow) = iw >= 0 && iw < s.W ? Scalar(x(n, c, ih, iw)) : Scalar(0);
        }
      });
  const auto weights = detail::as_matrix(w, 0, s.K, CRS);
  for (std::int64_t n = 0; n < s.N; ++n)
    gemm(exec, Trans::no, Trans::no, Scalar(1), weights, detail::as_matrix(cols, n * CRS * P, CRS, P), Scalar(0),
         detail::as_matrix(y, n * s.K * P, s.K, P));
}

template <class Exec, class VX, class VW, class VY>
void conv2d_forward_direct(const Exec& exec, VX x, VW w, VY y, int stride, int pad) {
  using Scalar = typename VY::non_const_value_type;
  const Conv2dShape s = detail::conv2d_check(x, w, y, stride, pad);
  const std::int64_t OH = s.OH(), OW = s.OW(), strips = ceil_div(OW, conv_strip);
  const std::int64_t items = s.N * s.K * OH * strips;
  Kokkos::parallel_for(
      "sextant::conv2d_forward_direct", Kokkos::RangePolicy<Exec>(exec, 0, items),
      KOKKOS_LAMBDA(const std::int64_t item) {
        const std::int64_t strip = item % strips;
        const std::int64_t oh = (item / strips) % OH;
        const std::int64_t k = (item / (strips * OH)) % s.K;
        const std::int64_t n = item / (strips * OH * s.K);
        const std::int64_t ow0 = strip * conv_strip;
        const int width = int(OW - ow0 < conv_strip ? OW - ow0 : conv_strip);
        Scalar acc[conv_strip];
        for (int o = 0; o < conv_strip; ++o) acc[o] = Scalar(0);
        for (std::int64_t c = 0; c < s.C; ++c) {
          for (std::int64_t r = 0; r < s.R; ++r) {
            const std::int64_t ih = oh * s.stride - s.pad + r;
            if (ih < 0 || ih >= s.H) continue;
            for (std::int64_t q = 0; q < s.S; ++q) {
              const Scalar wv = w(k, c, r, q);
              const std::int64_t iw0 = ow0 * s.stride - s.pad + q;
              const std::int64_t iw_last = iw0 + (width - 1) * s.stride;
              if (width == conv_strip && iw0 >= 0 && iw_last < s.W) {  // interior strip
                for (int o = 0; o < conv_strip; ++o) acc[o] += wv * x(n, c, ih, iw0 + o * s.stride);
              } else {
                for (int o = 0; o < width; ++o) {
                  const std::int64_t iw = iw0 + o * s.stride;
                  if (iw >= 0 && iw < s.W) acc[o] += wv * x(n, c, ih, iw);
                }
              }
            }
          }
        }
        for (int o = 0; o < width; ++o) y(n, k, oh, ow0 + o) = acc[o];
      });
}

}  // namespace sextant::kernels
