// Descriptors of row softmax and layer norm, forward and backward.
#include "kernels/layernorm.hpp"
#include "kernels/softmax.hpp"

#include "kernels/descriptors/support.hpp"
#include "kernels/reference/normalization.hpp"

namespace sextant::kernels::descriptors {
namespace {

template <bool Backward>
struct Softmax {
  template <class Scalar>
  class Of final : public Instance {
   public:
    Of(const Shape& s, std::uint64_t seed)
        : rows_(s["rows"]), cols_(s["cols"]),
          x_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "x"), rows_, cols_),
          y_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "y"), rows_, cols_),
          dy_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dy"), Backward ? rows_ : 0, cols_),
          dx_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dx"), Backward ? rows_ : 0, cols_) {
      fill_uniform(exec_, x_, seed, 0.1, 4.0);
      if (Backward) {
        fill_uniform(exec_, dy_, seed + 1, 0.1, 1.0);
        softmax_forward(exec_, x_, y_);  // the backward pass starts from real probabilities
      }
      exec_.fence();
    }

    void run() override {
      if constexpr (Backward)
        softmax_backward(exec_, y_, dy_, dx_);
      else
        softmax_forward(exec_, x_, y_);
      exec_.fence();
    }

    Validation validate() override {
      Validation v;
      const double u = unit_roundoff<Scalar>();
      if constexpr (Backward) {
        poison(dx_);
        run();
        compare(v, "dx", to_host(dx_), reference::softmax_backward(rows_, cols_, to_host(y_), to_host(dy_), u));
      } else {
        poison(y_);
        run();
        compare(v, "y", to_host(y_), reference::softmax_forward(rows_, cols_, to_host(x_), u));
      }
      return v;
    }

   private:
    Exec exec_;
    std::int64_t rows_, cols_;
    View2<Scalar, Exec> x_, y_, dy_, dx_;
  };
};

constexpr double layernorm_eps = 1e-5;

template <bool Backward>
struct LayerNorm {
  template <class Scalar>
  class Of final : public Instance {
   public:
    Of(const Shape& s, std::uint64_t seed)
        : rows_(s["rows"]), cols_(s["cols"]),
          x_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "x"), rows_, cols_),
          y_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "y"), rows_, cols_),
          dy_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dy"), Backward ? rows_ : 0, cols_),
          dx_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dx"), Backward ? rows_ : 0, cols_),
          gamma_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gamma"), cols_),
          beta_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "beta"), cols_),
          dgamma_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dgamma"), Backward ? cols_ : 0),
          dbeta_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dbeta"), Backward ? cols_ : 0),
          mean_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "mean"), rows_),
          rstd_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "rstd"), rows_) {
      fill_uniform(exec_, x_, seed, 0.1, 2.0);
      fill_uniform(exec_, gamma_, seed + 1, 0.5, 1.5);
      fill_uniform(exec_, beta_, seed + 2, 0.1, 1.0);
      if (Backward) {
        fill_uniform(exec_, dy_, seed + 3, 0.1, 1.0);
        layernorm_forward(exec_, x_, gamma_, beta_, Scalar(layernorm_eps), y_, mean_, rstd_);
      }
      exec_.fence();
    }

    void run() override {
      if constexpr (Backward)
        layernorm_backward(exec_, dy_, x_, gamma_, mean_, rstd_, dx_, dgamma_, dbeta_);
      else
        layernorm_forward(exec_, x_, gamma_, beta_, Scalar(layernorm_eps), y_, mean_, rstd_);
      exec_.fence();
    }

    Validation validate() override {
      Validation v;
      const double u = unit_roundoff<Scalar>();
      if constexpr (Backward) {
        poison(dx_);
        poison(dgamma_);
        poison(dbeta_);
        run();
        auto ref = reference::layernorm_backward(rows_, cols_, to_host(dy_), to_host(x_), to_host(gamma_),
                                                 to_host(mean_), to_host(rstd_), u);
        compare(v, "dx", to_host(dx_), ref[0]);
        compare(v, "dgamma", to_host(dgamma_), ref[1]);
        compare(v, "dbeta", to_host(dbeta_), ref[2]);
      } else {
        poison(y_);
        poison(mean_);
        poison(rstd_);
        run();
        auto ref = reference::layernorm_forward(rows_, cols_, to_host(x_), to_host(gamma_), to_host(beta_),
                                                as_double(Scalar(layernorm_eps)), u);
        compare(v, "y", to_host(y_), ref[0]);
        compare(v, "mean", to_host(mean_), ref[1]);
        compare(v, "rstd", to_host(rstd_), ref[2]);
      }
      return v;
    }

   private:
    Exec exec_;
    std::int64_t rows_, cols_;
    View2<Scalar, Exec> x_, y_, dy_, dx_;
    View1<Scalar, Exec> gamma_, beta_, dgamma_, dbeta_, mean_, rstd_;
  };
};

KernelInfo rows_kernel(std::string name, std::string family, std::string pass) {
  KernelInfo k;
  k.name = std::move(name);
  k.family = std::move(family);
  k.pass = std::move(pass);
  k.params = {"rows", "cols"};
  k.dtypes = real_dtypes;
  return k;
}

}  // namespace

std::vector<KernelInfo> normalization_kernels() {
  KernelInfo sf = rows_kernel("softmax_forward", "normalization", "forward");
  sf.counting = "5 FLOPs per element (max, subtract, exp, sum, scale); bytes: x read, y written";
  sf.test_shapes = {{{"rows", 3}, {"cols", 7}}, {{"rows", 17}, {"cols", 129}}, {{"rows", 64}, {"cols", 1000}}};
  sf.quick_shapes = {{{"rows", 4096}, {"cols", 512}}};
  sf.full_shapes = {{{"rows", 8192}, {"cols", 512}}, {{"rows", 16384}, {"cols", 2048}}, {{"rows", 512}, {"cols", 50257}}};
  sf.flops = [](const Shape& s, Dtype) { return softmax_forward_flops(double(s["rows"]), double(s["cols"])); };
  sf.exps = [](const Shape& s, Dtype) { return softmax_forward_exps(double(s["rows"]), double(s["cols"])); };
  sf.bytes = [](const Shape& s, Dtype t) {
    return softmax_forward_bytes(double(s["rows"]), double(s["cols"]), double(size_of(t)));
  };
  sf.make = &make_real<Softmax<false>::template Of>;

  KernelInfo sb = sf;
  sb.name = "softmax_backward";
  sb.pass = "backward";
  sb.counting = "4 FLOPs per element (the dot y.dy, subtract, multiply); bytes: y, dy read, dx written";
  sb.flops = [](const Shape& s, Dtype) { return softmax_backward_flops(double(s["rows"]), double(s["cols"])); };
  sb.exps = nullptr;
  sb.bytes = [](const Shape& s, Dtype t) {
    return softmax_backward_bytes(double(s["rows"]), double(s["cols"]), double(size_of(t)));
  };
  sb.make = &make_real<Softmax<true>::template Of>;

  KernelInfo lf = rows_kernel("layernorm_forward", "normalization", "forward");
  lf.counting =
      "8 FLOPs per element (two-pass mean and variance, normalise, scale, shift); bytes: x read, y "
      "written, gamma and beta read, mean and rstd written";
  lf.test_shapes = {{{"rows", 5}, {"cols", 7}}, {{"rows", 33}, {"cols", 128}}, {{"rows", 64}, {"cols", 1000}}};
  lf.quick_shapes = {{{"rows", 4096}, {"cols", 1024}}};
  lf.full_shapes = {{{"rows", 8192}, {"cols", 1024}}, {{"rows", 16384}, {"cols", 4096}}};
  lf.flops = [](const Shape& s, Dtype) { return layernorm_forward_flops(double(s["rows"]), double(s["cols"])); };
  lf.bytes = [](const Shape& s, Dtype t) {
    return layernorm_forward_bytes(double(s["rows"]), double(s["cols"]), double(size_of(t)));
  };
  lf.make = &make_real<LayerNorm<false>::template Of>;

  KernelInfo lb = lf;
  lb.name = "layernorm_backward";
  lb.pass = "backward";
  lb.counting =
      "18 FLOPs per element (row pass 13, parameter-gradient pass 5); bytes: compulsory, dy and x read "
      "once, dx written, gamma, mean, rstd read, dgamma and dbeta written";
  lb.flops = [](const Shape& s, Dtype) { return layernorm_backward_flops(double(s["rows"]), double(s["cols"])); };
  lb.bytes = [](const Shape& s, Dtype t) {
    return layernorm_backward_bytes(double(s["rows"]), double(s["cols"]), double(size_of(t)));
  };
  lb.make = &make_real<LayerNorm<true>::template Of>;
  return {sf, sb, lf, lb};
}

}  // namespace sextant::kernels::descriptors
