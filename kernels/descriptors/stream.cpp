// Descriptors of the STREAM kernels: copy, scale, add, triad, dot.
#include "kernels/stream.hpp"

#include "kernels/descriptors/support.hpp"
#include "kernels/reference/blas.hpp"

namespace sextant::kernels::descriptors {
namespace {

constexpr double scalar_q = 0.4;  // STREAM's q is 3; a value below 1 keeps repeated runs bounded

template <StreamOp Op>
struct StreamInstance {
  template <class Scalar>
  class Of final : public Instance {
   public:
    Of(const Shape& shape, std::uint64_t seed)
        : n_(shape["n"]),
          a_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "a"), n_),
          b_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "b"), n_),
          c_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "c"), n_) {
      fill_uniform(exec_, a_, seed, 0.5, 1.5);
      fill_uniform(exec_, b_, seed + 1, 0.5, 1.5);
      fill_uniform(exec_, c_, seed + 2, 0.5, 1.5);
      exec_.fence();
    }

    void run() override {
      const Scalar q = Scalar(scalar_q);
      if constexpr (Op == StreamOp::copy) stream_copy(exec_, c_, a_);
      if constexpr (Op == StreamOp::scale) stream_scale(exec_, b_, c_, q);
      if constexpr (Op == StreamOp::add) stream_add(exec_, c_, a_, b_);
      if constexpr (Op == StreamOp::triad) stream_triad(exec_, a_, b_, c_, q);
      if constexpr (Op == StreamOp::dot) result_ = stream_dot(exec_, a_, b_);
      exec_.fence();
    }

    Validation validate() override {
      Validation v;
      const double u = unit_roundoff<Scalar>(), q = as_double(Scalar(scalar_q));
      // Inputs as the kernel will read them, then the output poisoned.
      const auto a = to_host(a_), b = to_host(b_), c = to_host(c_);
      if constexpr (Op == StreamOp::copy) poison(c_);
      if constexpr (Op == StreamOp::scale) poison(b_);
      if constexpr (Op == StreamOp::add) poison(c_);
      if constexpr (Op == StreamOp::triad) poison(a_);
      result_ = Scalar(std::numeric_limits<float>::quiet_NaN());
      run();
      if constexpr (Op == StreamOp::copy) compare(v, "c", to_host(c_), reference::stream_copy(a, u));
      if constexpr (Op == StreamOp::scale) compare(v, "b", to_host(b_), reference::stream_scale(c, q, u));
      if constexpr (Op == StreamOp::add) compare(v, "c", to_host(c_), reference::stream_add(a, b, u));
      if constexpr (Op == StreamOp::triad) compare(v, "a", to_host(a_), reference::stream_triad(b, c, q, u));
      if constexpr (Op == StreamOp::dot) compare(v, "dot", {as_double(result_)}, reference::dot(a, b, u));
      return v;
    }

   private:
    Exec exec_;
    std::int64_t n_;
    View1<Scalar, Exec> a_, b_, c_;
    Scalar result_ = Scalar(0);
  };
};

template <StreamOp Op>
KernelInfo stream_kernel(std::string name) {
  KernelInfo k;
  k.name = std::move(name);
  k.family = "stream";
  k.counting =
      "STREAM counting: the arrays named in the kernel each moved once (copy, scale: 2; add, triad: 3; "
      "dot: 2 read), no write-allocate traffic; FLOPs per element copy 0, scale 1, add 1, triad 2, dot 2";
  k.params = {"n"};
  k.dtypes = real_dtypes;
  k.test_shapes = {{{"n", 1000}}, {{"n", 4099}}, {{"n", 65537}}};
  k.quick_shapes = {{{"n", 1 << 21}}};
  k.full_shapes = {{{"n", 1 << 20}}, {{"n", 1 << 24}}, {{"n", 1 << 26}}};
  k.flops = [](const Shape& s, Dtype) { return stream_flops(Op, double(s["n"])); };
  k.bytes = [](const Shape& s, Dtype t) { return stream_bytes(Op, double(s["n"]), double(size_of(t))); };
  k.make = &make_real<StreamInstance<Op>::template Of>;
  return k;
}

}  // namespace

std::vector<KernelInfo> stream_kernels() {
  return {stream_kernel<StreamOp::copy>("stream_copy"), stream_kernel<StreamOp::scale>("stream_scale"),
          stream_kernel<StreamOp::add>("stream_add"), stream_kernel<StreamOp::triad>("stream_triad"),
          stream_kernel<StreamOp::dot>("stream_dot")};
}

}  // namespace sextant::kernels::descriptors
