// Descriptor of the peak-FLOP kernel (independent FMA chains), per precision.
#include "kernels/peak.hpp"

#include <tuple>

#include "kernels/descriptors/support.hpp"
#include "kernels/reference/blas.hpp"

namespace sextant::kernels::descriptors {
namespace {

// The register width of a shape: a host shape names it (bits), a device shape has none.
int bits_of(const Shape& s) { return runs_on_host<Exec> ? int(s["bits"]) : 0; }

template <class Scalar>
class PeakInstance final : public Instance {
 public:
  PeakInstance(const Shape& shape, std::uint64_t)
      : items_(shape["items"]), reps_(int(shape["reps"])), vectors_(int(shape["vectors"])), bits_(bits_of(shape)),
        out_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "peak_out"), items_) {}

  void run() override {
    peak_fma(exec_, out_, reps_, vectors_, bits_);
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
    const int chains = peak_chains<Exec, Scalar>(vectors_, bits_);
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
  int reps_, vectors_, bits_;
  View1<Scalar, Exec> out_;
};

template <class Scalar>
double peak_flops_of(const Shape& s) {
  return peak_flops<Exec, Scalar>(double(s["items"]), double(s["reps"]), int(s["vectors"]), bits_of(s));
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
  constexpr bool host = runs_on_host<Exec>;
  k.counting =
      "2 FLOPs per multiply-add: items x chains x reps x 2, chains = vectors x the lanes of the dtype in a "
      "register of `bits` (host; a GPU thread's vector is one scalar); bytes: one result per item";
  k.params = {"items", "reps", "vectors"};
  if (host) k.params.push_back("bits");
  k.dtypes = available_dtypes();
  // The sweep over register widths and accumulator counts: the widest ISA the CPU runs
  // is not always the build's, and how many FMAs a core needs in flight is not in the
  // ISA, so every width and every count up to its register file is measured and the
  // fit keeps the fastest (the ceiling). Work per shape grows with the count; the
  // smallest counts are latency-bound and quick.
  auto sweep = [&](std::int64_t items) {
    std::vector<Shape> shapes;
    for (int bits : peak_vector_bits<Exec>())
      for (int v : peak_vector_counts<Exec>(host ? bits / 8 : isa::vector_bytes)) {
        Shape s{{"items", items}, {"reps", 1000}, {"vectors", v}};
        if (host) s.dims.emplace_back("bits", bits);
        shapes.push_back(std::move(s));
      }
    return shapes;
  };
  // Test shapes: the fewest and the most accumulators at each width, and one between.
  for (int bits : peak_vector_bits<Exec>()) {
    const auto counts = peak_vector_counts<Exec>(host ? bits / 8 : isa::vector_bytes);
    for (auto [items, reps, v] : {std::tuple{7, 10, counts.front()}, std::tuple{33, 100, counts.back()},
                                  std::tuple{64, 3, counts[counts.size() / 2]}}) {
      Shape s{{"items", items}, {"reps", reps}, {"vectors", v}};
      if (host) s.dims.emplace_back("bits", bits);
      k.test_shapes.push_back(std::move(s));
    }
  }
  // Items are the parallelism: a host needs a few per thread, a GPU about as many as it
  // keeps threads in flight (10^5 to 10^6 on current devices; fewer leave SMs idle, and
  // an H200 reached half its rate at 65536). Surplus items only add work in proportion.
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
