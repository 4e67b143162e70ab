// Descriptors of bias + GELU and ReLU, forward and backward.
#include "kernels/activation.hpp"

#include "kernels/descriptors/support.hpp"
#include "kernels/reference/elementwise.hpp"

namespace sextant::kernels::descriptors {
namespace {

template <bool Backward>
struct BiasGelu {
  template <class Scalar>
  class Of final : public Instance {
   public:
    Of(const Shape& s, std::uint64_t seed)
        : rows_(s["rows"]), cols_(s["cols"]),
          x_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "x"), rows_, cols_),
          dy_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dy"), Backward ? rows_ : 0, cols_),
          out_(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(Backward ? "dx" : "y")), rows_, cols_),
          bias_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bias"), cols_),
          dbias_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dbias"), Backward ? cols_ : 0) {
      fill_uniform(exec_, x_, seed, 0.05, 2.0);
      fill_uniform(exec_, bias_, seed + 1, 0.05, 1.0);
      if (Backward) fill_uniform(exec_, dy_, seed + 2, 0.1, 1.0);
      exec_.fence();
    }

    void run() override {
      if constexpr (Backward)
        bias_gelu_backward(exec_, dy_, x_, bias_, out_, dbias_);
      else
        bias_gelu_forward(exec_, x_, bias_, out_);
      exec_.fence();
    }

    Validation validate() override {
      Validation v;
      const double u = unit_roundoff<Scalar>();
      poison(out_);
      if (Backward) poison(dbias_);
      run();
      if constexpr (Backward) {
        auto ref = reference::bias_gelu_backward(rows_, cols_, to_host(dy_), to_host(x_), to_host(bias_), u);
        compare(v, "dx", to_host(out_), ref[0]);
        compare(v, "dbias", to_host(dbias_), ref[1]);
      } else {
        compare(v, "y", to_host(out_), reference::bias_gelu_forward(rows_, cols_, to_host(x_), to_host(bias_), u));
      }
      return v;
    }

   private:
    Exec exec_;
    std::int64_t rows_, cols_;
    View2<Scalar, Exec> x_, dy_, out_;
    View1<Scalar, Exec> bias_, dbias_;
  };
};

template <bool Backward>
struct Relu {
  template <class Scalar>
  class Of final : public Instance {
   public:
    Of(const Shape& s, std::uint64_t seed)
        : n_(s["n"]),
          x_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "x"), n_),
          dy_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dy"), Backward ? n_ : 0),
          out_(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(Backward ? "dx" : "y")), n_) {
      fill_uniform(exec_, x_, seed, 0.05, 1.0);
      if (Backward) fill_uniform(exec_, dy_, seed + 1, 0.05, 1.0);
      exec_.fence();
    }

    void run() override {
      if constexpr (Backward)
        relu_backward(exec_, dy_, x_, out_);
      else
        relu_forward(exec_, x_, out_);
      exec_.fence();
    }

    Validation validate() override {
      Validation v;
      poison(out_);
      run();
      if constexpr (Backward)
        compare(v, "dx", to_host(out_), reference::relu_backward(to_host(dy_), to_host(x_)));
      else
        compare(v, "y", to_host(out_), reference::relu_forward(to_host(x_)));
      return v;
    }

   private:
    Exec exec_;
    std::int64_t n_;
    View1<Scalar, Exec> x_, dy_, out_;
  };
};

}  // namespace

std::vector<KernelInfo> activation_kernels() {
  KernelInfo gf;
  gf.name = "bias_gelu_forward";
  gf.family = "activation";
  gf.pass = "forward";
  gf.counting =
      "10 FLOPs per element (bias add, tanh-form GELU with tanh counted as 1); bytes: x read, y "
      "written, bias read ((2 rows cols + cols) scalars)";
  gf.params = {"rows", "cols"};
  gf.dtypes = real_dtypes;
  gf.test_shapes = {{{"rows", 7}, {"cols", 5}}, {{"rows", 33}, {"cols", 100}}, {{"rows", 128}, {"cols", 257}}};
  gf.quick_shapes = {{{"rows", 1024}, {"cols", 1024}}};
  gf.full_shapes = {{{"rows", 2048}, {"cols", 3072}}, {{"rows", 8192}, {"cols", 4096}}};
  gf.flops = [](const Shape& s, Dtype) { return bias_gelu_forward_flops(double(s["rows"]), double(s["cols"])); };
  gf.exps = [](const Shape& s, Dtype) { return bias_gelu_forward_exps(double(s["rows"]), double(s["cols"])); };
  gf.bytes = [](const Shape& s, Dtype t) {
    return bias_gelu_forward_bytes(double(s["rows"]), double(s["cols"]), double(size_of(t)));
  };
  gf.make = &make_real<BiasGelu<false>::template Of>;

  KernelInfo gb = gf;
  gb.name = "bias_gelu_backward";
  gb.pass = "backward";
  gb.counting =
      "22 FLOPs per element (GELU derivative with tanh counted as 1, times dy, bias-gradient sum); "
      "bytes: dy, x read, dx written, bias read, dbias written ((3 rows cols + 2 cols) scalars)";
  gb.flops = [](const Shape& s, Dtype) { return bias_gelu_backward_flops(double(s["rows"]), double(s["cols"])); };
  gb.exps = [](const Shape& s, Dtype) { return bias_gelu_backward_exps(double(s["rows"]), double(s["cols"])); };
  gb.bytes = [](const Shape& s, Dtype t) {
    return bias_gelu_backward_bytes(double(s["rows"]), double(s["cols"]), double(size_of(t)));
  };
  gb.make = &make_real<BiasGelu<true>::template Of>;

  KernelInfo rf;
  rf.name = "relu_forward";
  rf.family = "activation";
  rf.pass = "forward";
  rf.counting = "1 FLOP (a comparison) per element; bytes: x read, y written (2 n scalars)";
  rf.params = {"n"};
  rf.dtypes = real_dtypes;
  rf.test_shapes = {{{"n", 1000}}, {{"n", 4099}}, {{"n", 65537}}};
  rf.quick_shapes = {{{"n", 1 << 21}}};
  rf.full_shapes = {{{"n", 1 << 22}}, {{"n", 1 << 26}}};
  rf.flops = [](const Shape& s, Dtype) { return relu_forward_flops(double(s["n"])); };
  rf.bytes = [](const Shape& s, Dtype t) { return relu_forward_bytes(double(s["n"]), double(size_of(t))); };
  rf.make = &make_real<Relu<false>::template Of>;

  KernelInfo rb = rf;
  rb.name = "relu_backward";
  rb.pass = "backward";
  rb.counting = "1 FLOP (a comparison) per element; bytes: dy, x read, dx written (3 n scalars)";
  rb.flops = [](const Shape& s, Dtype) { return relu_backward_flops(double(s["n"])); };
  rb.bytes = [](const Shape& s, Dtype t) { return relu_backward_bytes(double(s["n"]), double(size_of(t))); };
  rb.make = &make_real<Relu<true>::template Of>;
  return {gf, gb, rf, rb};
}

}  // namespace sextant::kernels::descriptors
