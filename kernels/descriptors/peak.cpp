// Descriptor of the peak-FLOP kernel (independent FMA chains), per precision.
#include "kernels/peak.hpp"

#include "kernels/descriptors/support.hpp"
#include "kernels/reference/blas.hpp"

namespace sextant::kernels::descriptors {
namespace {

template <class Scalar>
class PeakInstance final : public Instance {
 public:
  PeakInstance(const Shape& shape, std::uint64_t)
      : items_(shape["items"]), reps_(int(shape["reps"])), vectors_(int(shape["vectors"])),
        out_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "peak_out"), items_) {}

  void run() override {
    peak_fma(exec_, out_, reps_, vectors_);
    exec_.fence();
  }

  Validation validate() override {
    Validation v;
    poison(out_);
    run();
    // The kernel's constants, rounded as it rounds them (through float, then Scalar).
    auto round = [](double x) { return as_double(static_cast<Scalar>(static_cast<float>(x))); };
    const auto start = [&](std::int64_t i, int j) { return round(PeakConstants::start(i, j)); };
    const auto got = to_host(out_);
    // Items are independent: the reference runs on evenly spread items.
    const int chains = peak_chains<Exec, Scalar>(vectors_);
    const auto items = reference::sample_rows(items_, double(chains) * reps_, reference_budget);
    reference::Bounded ref;
    for (std::int64_t i : items) {
      auto one = reference::peak_fma(
          1, chains, reps_, round(PeakConstants::a), round(PeakConstants::b),
          [&](std::int64_t, int j) { return start(i, j); }, unit_roundoff<Scalar>());
      ref.index.push_back(std::size_t(i));
      ref.value.push_back(one.value[0]);
      ref.bound.push_back(one.bound[0]);
    }
    compare(v, "out", got, ref);
    return v;
  }

 private:
  Exec exec_;
  std::int64_t items_;
  int reps_, vectors_;
  View1<Scalar, Exec> out_;
};

template <class Scalar>
double peak_flops_of(const Shape& s) {
  return peak_flops<Exec, Scalar>(double(s["items"]), double(s["reps"]), int(s["vectors"]));
}

std::unique_ptr<Instance> make_peak(const Shape& shape, Dtype dtype, std::uint64_t seed) {
  switch (dtype) {
    case Dtype::float64: return std::make_unique<PeakInstance<double>>(shape, seed);
    case Dtype::float32: return std::make_unique<PeakInstance<float>>(shape, seed);
#ifdef SEXTANT_HAVE_FLOAT16
    case Dtype::float16: return std::make_unique<PeakInstance<Kokkos::Experimental::half_t>>(shape, seed);
#endif
#ifdef SEXTANT_HAVE_BFLOAT16
    case Dtype::bfloat16: return std::make_unique<PeakInstance<Kokkos::Experimental::bhalf_t>>(shape, seed);
#endif
    default: break;
  }
  throw std::invalid_argument("peak_fma has no " + std::string(to_string(dtype)) + " version here");
}

}  // namespace

std::vector<KernelInfo> peak_kernels() {
  KernelInfo k;
  k.name = "peak_fma";
  k.family = "peak";
  k.counting =
      "2 FLOPs per multiply-add: items x chains x reps x 2, chains = vectors x the ISA's lanes of the dtype "
      "(independent recurrences per work item; a GPU thread's vector is one scalar); bytes: one result per item";
  k.params = {"items", "reps", "vectors"};
  k.dtypes = available_dtypes();
  // The sweep over accumulator counts: how many FMAs a core needs in flight is not in
  // the ISA, so every count up to the register file is measured and the fit keeps the
  // fastest (the ceiling). Work per shape grows with the count; the smallest counts
  // are latency-bound and quick.
  const auto counts = peak_vector_counts<Exec>();
  auto sweep = [&](std::int64_t items) {
    std::vector<Shape> shapes;
    for (int v : counts) shapes.push_back({{"items", items}, {"reps", 1000}, {"vectors", v}});
    return shapes;
  };
  k.test_shapes = {{{"items", 7}, {"reps", 10}, {"vectors", counts.front()}},
                   {{"items", 33}, {"reps", 100}, {"vectors", counts.back()}},
                   {{"items", 64}, {"reps", 3}, {"vectors", counts[counts.size() / 2]}}};
  // Items are the parallelism: a host needs a few per thread, a GPU about as many as it
  // keeps threads in flight (10^5 to 10^6 on current devices; fewer leave SMs idle, and
  // an H200 reached half its rate at 65536). Surplus items only add work in proportion.
  constexpr bool host = runs_on_host<Exec>;
  k.quick_shapes = sweep(host ? 8192 : 1 << 20);
  k.full_shapes = sweep(host ? 65536 : 1 << 22);
  k.flops = [](const Shape& s, Dtype t) {
    switch (t) {
      case Dtype::float64: return peak_flops_of<double>(s);
      case Dtype::float32: return peak_flops_of<float>(s);
#ifdef SEXTANT_HAVE_FLOAT16
      case Dtype::float16: return peak_flops_of<Kokkos::Experimental::half_t>(s);
#endif
#ifdef SEXTANT_HAVE_BFLOAT16
      case Dtype::bfloat16: return peak_flops_of<Kokkos::Experimental::bhalf_t>(s);
#endif
      default: return 0.0;
    }
  };
  k.bytes = [](const Shape& s, Dtype t) { return double(s["items"]) * double(size_of(t)); };
  k.make = &make_peak;
  return {k};
}

}  // namespace sextant::kernels::descriptors
