// Descriptors of the sum reduction and the AdamW update.
#include "kernels/adamw.hpp"
#include "kernels/reduction.hpp"

#include "kernels/descriptors/support.hpp"
#include "kernels/reference/blas.hpp"
#include "kernels/reference/elementwise.hpp"

namespace sextant::kernels::descriptors {
namespace {

template <class Scalar>
class SumInstance final : public Instance {
 public:
  SumInstance(const Shape& s, std::uint64_t seed)
      : x_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "x"), s["n"]) {
    fill_uniform(exec_, x_, seed, 0.1, 1.0);
    exec_.fence();
  }

  void run() override {
    result_ = reduce_sum(exec_, x_);
    exec_.fence();
  }

  Validation validate() override {
    Validation v;
    result_ = Scalar(std::numeric_limits<float>::quiet_NaN());
    run();
    compare(v, "sum", {as_double(result_)}, reference::sum(to_host(x_), unit_roundoff<Scalar>()));
    return v;
  }

 private:
  Exec exec_;
  View1<Scalar, Exec> x_;
  Scalar result_ = Scalar(0);
};

template <class Scalar>
class AdamWInstance final : public Instance {
 public:
  AdamWInstance(const Shape& s, std::uint64_t seed)
      : n_(s["n"]), p_(alloc("param")), g_(alloc("grad")), m_(alloc("m")), v_(alloc("v")),
        p0_(alloc("param0")), m0_(alloc("m0")), v0_(alloc("v0")) {
    fill_uniform(exec_, p0_, seed, 0.1, 1.0);
    fill_uniform(exec_, g_, seed + 1, 0.01, 1.0);
    fill_uniform(exec_, m0_, seed + 2, 0.01, 0.1);
    fill_uniform(exec_, v0_, seed + 3, 0.001, 0.01, false);  // a second moment is positive
    reset();
    hp_.step = 10;
  }

  void run() override {
    adamw_update(exec_, p_, g_, m_, v_, hp_);
    exec_.fence();
  }

  // In place: validation restores the saved state, so an element the kernel skips keeps
  // its old value, which differs from the reference's update (g is never zero).
  Validation validate() override {
    Validation v;
    reset();
    const auto p = to_host(p_), g = to_host(g_), m = to_host(m_), vv = to_host(v_);
    run();
    auto ref = reference::adamw(p, g, m, vv, hp_, unit_roundoff<Scalar>());
    compare(v, "param", to_host(p_), ref[0]);
    compare(v, "m", to_host(m_), ref[1]);
    compare(v, "v", to_host(v_), ref[2]);
    return v;
  }

 private:
  View1<Scalar, Exec> alloc(const std::string& label) const {
    return View1<Scalar, Exec>(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), n_);
  }
  void reset() {
    Kokkos::deep_copy(p_, p0_);
    Kokkos::deep_copy(m_, m0_);
    Kokkos::deep_copy(v_, v0_);
  }

  Exec exec_;
  std::int64_t n_;
  View1<Scalar, Exec> p_, g_, m_, v_, p0_, m0_, v0_;
  AdamWParams hp_;
};

}  // namespace

std::vector<KernelInfo> optimizer_kernels() {
  KernelInfo s;
  s.name = "reduce_sum";
  s.family = "reduction";
  s.counting = "n FLOPs (one add per element); bytes: x read once";
  s.params = {"n"};
  s.dtypes = real_dtypes;
  s.test_shapes = {{{"n", 1000}}, {{"n", 4099}}, {{"n", 65537}}};
  s.quick_shapes = {{{"n", 1 << 21}}};
  s.full_shapes = {{{"n", 1 << 22}}, {{"n", 1 << 26}}};
  s.flops = [](const Shape& sh, Dtype) { return reduce_sum_flops(double(sh["n"])); };
  s.bytes = [](const Shape& sh, Dtype t) { return reduce_sum_bytes(double(sh["n"]), double(size_of(t))); };
  s.make = &make_real<SumInstance>;

  KernelInfo a = s;
  a.name = "adamw_update";
  a.family = "optimizer";
  a.pass = "update";
  a.counting =
      "16 FLOPs per parameter (sqrt and divide counted as 1); bytes: param, grad, m, v read and param, "
      "m, v written (7 n scalars); working set: param, grad, m, v (4 n scalars, updated in place)";
  a.quick_shapes = {{{"n", 1 << 20}}};
  a.full_shapes = {{{"n", 1 << 20}}, {{"n", 1 << 25}}};
  a.flops = [](const Shape& sh, Dtype) { return adamw_flops(double(sh["n"])); };
  a.bytes = [](const Shape& sh, Dtype t) { return adamw_bytes(double(sh["n"]), double(size_of(t))); };
  a.in_place = {4, 3};  // param, grad, m, v; param, m, v written back
  a.make = &make_real<AdamWInstance>;
  return {s, a};
}

}  // namespace sextant::kernels::descriptors
