// Descriptor of the NCHW conv2d forward kernel.
#include "kernels/conv2d.hpp"

#include "kernels/descriptors/support.hpp"
#include "kernels/reference/conv2d.hpp"

namespace sextant::kernels::descriptors {
namespace {

Conv2dShape conv_shape(const Shape& s) {
  return {s["N"], s["C"], s["H"], s["W"], s["K"], s["R"], s["S"], s["stride"], s["pad"]};
}

template <class Scalar>
class ConvInstance final : public Instance {
 public:
  ConvInstance(const Shape& shape, std::uint64_t seed)
      : s_(conv_shape(shape)),
        x_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "x"), s_.N, s_.C, s_.H, s_.W),
        w_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "w"), s_.K, s_.C, s_.R, s_.S),
        y_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "y"), s_.N, s_.K, s_.OH(), s_.OW()),
        cols_(conv2d_workspace<Scalar, Exec>(s_)) {
    fill_uniform(exec_, x_, seed, 0.1, 1.0);
    fill_uniform(exec_, w_, seed + 1, 0.1, 1.0);
    exec_.fence();
  }

  void run() override {
    conv2d_forward(exec_, x_, w_, y_, int(s_.stride), int(s_.pad), cols_);
    exec_.fence();
  }

  Validation validate() override {
    Validation v;
    poison(y_);
    run();
    const double plane_cost = double(s_.OH()) * s_.OW() * s_.C * s_.R * s_.S;
    const auto planes = reference::sample_rows(s_.N * s_.K, plane_cost, reference_budget);
    compare(v, "y", to_host(y_),
            reference::conv2d_forward(s_, to_host(x_), to_host(w_), unit_roundoff<Scalar>(), planes));
    return v;
  }

 private:
  Exec exec_;
  Conv2dShape s_;
  View4<Scalar, Exec> x_, w_, y_;
  View3<Scalar, Exec> cols_;
};

Shape conv(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t K, std::int64_t R,
           std::int64_t S, std::int64_t stride, std::int64_t pad) {
  return {{"N", N}, {"C", C}, {"H", H}, {"W", W}, {"K", K}, {"R", R}, {"S", S}, {"stride", stride}, {"pad", pad}};
}

}  // namespace

std::vector<KernelInfo> conv_kernels() {
  KernelInfo k;
  k.name = "conv2d_forward";
  k.family = "conv";
  k.pass = "forward";
  k.counting =
      "2 N K OH OW C R S FLOPs (every tap of the padded window, as cuDNN counts); bytes: compulsory, "
      "x, w read once and y written once (im2col workspace traffic not counted)";
  k.params = {"N", "C", "H", "W", "K", "R", "S", "stride", "pad"};
  k.dtypes = real_dtypes;
  // Widths below, at and across GEMM and strip tiles, strides 1 and 2, padding larger
  // than the window's overhang, 1 x 1 kernels.
  k.test_shapes = {conv(2, 3, 9, 11, 4, 3, 3, 1, 1), conv(1, 5, 17, 37, 6, 5, 5, 2, 2),
                   conv(3, 4, 8, 8, 2, 1, 1, 1, 0), conv(1, 2, 20, 35, 3, 3, 3, 1, 0),
                   conv(2, 3, 15, 16, 2, 7, 7, 2, 3)};
  k.quick_shapes = {conv(4, 64, 28, 28, 64, 3, 3, 1, 1)};
  k.full_shapes = {conv(8, 64, 56, 56, 64, 3, 3, 1, 1), conv(8, 3, 224, 224, 64, 7, 7, 2, 3),
                   conv(8, 256, 14, 14, 256, 3, 3, 1, 1)};
  k.flops = [](const Shape& s, Dtype) { return conv2d_flops(conv_shape(s)); };
  k.bytes = [](const Shape& s, Dtype t) { return conv2d_bytes(conv_shape(s), double(size_of(t))); };
  k.make = &make_real<ConvInstance>;
  return {k};
}

}  // namespace sextant::kernels::descriptors
