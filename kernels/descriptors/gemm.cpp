// Descriptors of GEMM and batched GEMM (C = op(A) op(B), alpha = 1, beta = 0), and of
// the accumulating GEMM (C += op(A) op(B), beta = 1: weight gradients over micro-batches),
// on two paths: the portable Kokkos kernels (gemm, ...) and, where Kokkos Kernels was
// found, the vendor's BLAS (vendor_gemm, ...): same shapes, counts and references.
#include "kernels/gemm.hpp"
#ifdef SEXTANT_HAVE_KOKKOS_KERNELS
#include "kernels/vendor_blas.hpp"
#endif

#include <algorithm>
#include <utility>

#include "kernels/descriptors/support.hpp"
#include "kernels/reference/blas.hpp"

namespace sextant::kernels::descriptors {
namespace {

// The two paths, as the instances call them.
struct Portable {
  template <class... Args>
  static void gemm(Args&&... args) { kernels::gemm(std::forward<Args>(args)...); }
  template <class... Args>
  static void batched(Args&&... args) { kernels::gemm_batched(std::forward<Args>(args)...); }
};
#ifdef SEXTANT_HAVE_KOKKOS_KERNELS
struct Vendor {
  template <class... Args>
  static void gemm(Args&&... args) { kernels::vendor_gemm(std::forward<Args>(args)...); }
  template <class... Args>
  static void batched(Args&&... args) { kernels::vendor_gemm_batched(std::forward<Args>(args)...); }
};
#endif

// Batched when Batched, else one rank-2 problem. ta, tb in the shape select transposes.
// Accumulate: beta = 1, C is an input too (every run adds to it).
template <class Path, bool Batched, bool Accumulate = false>
struct GemmInstance {
  template <class Scalar>
  class Of final : public Instance {
   public:
    Of(const Shape& s, std::uint64_t seed)
        : batch_(Batched ? s["batch"] : 1), M_(s["M"]), N_(s["N"]), K_(s["K"]),
          ta_(s["ta"] != 0), tb_(s["tb"] != 0),
          A_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "A"), batch_, ta_ ? K_ : M_, ta_ ? M_ : K_),
          B_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "B"), batch_, tb_ ? N_ : K_, tb_ ? K_ : N_),
          C_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "C"), batch_, M_, N_) {
      fill_uniform(exec_, A_, seed, 0.1, 1.0);
      fill_uniform(exec_, B_, seed + 1, 0.1, 1.0);
      fill_uniform(exec_, C_, seed + 2, 0.1, 1.0);
      exec_.fence();
    }

    void run() override {
      const Trans ta = ta_ ? Trans::yes : Trans::no, tb = tb_ ? Trans::yes : Trans::no;
      if constexpr (Batched) {
        Path::batched(exec_, ta, tb, Scalar(1), A_, B_, Scalar(beta), C_);
      } else {
        auto A = Kokkos::subview(A_, 0, Kokkos::ALL, Kokkos::ALL);
        auto B = Kokkos::subview(B_, 0, Kokkos::ALL, Kokkos::ALL);
        auto C = Kokkos::subview(C_, 0, Kokkos::ALL, Kokkos::ALL);
        Path::gemm(exec_, ta, tb, Scalar(1), A, B, Scalar(beta), C);
      }
      exec_.fence();
    }

    Validation validate() override {
      Validation v;
      // With beta = 0 C is poisoned, so unwritten elements show; with beta = 1 C is an
      // input (positive values), and an unwritten element keeps its old value, which
      // differs from the expected one because every product added is positive.
      std::vector<double> C;
      if (Accumulate)
        C = to_host(C_);
      else
        poison(C_);
      run();
      const auto A = to_host(A_), B = to_host(B_);
      reference::Bounded ref;
      // Rows sampled on large shapes; every batch entry is checked.
      const auto rows = reference::sample_rows(M_, double(N_) * K_ * batch_, reference_budget);
      ref = reference::gemm(batch_, M_, N_, K_, ta_, tb_, 1.0, A, B, double(beta), C, unit_roundoff<Scalar>(), rows);
      compare(v, "C", to_host(C_), ref);
      return v;
    }

   private:
    static constexpr int beta = Accumulate ? 1 : 0;
    Exec exec_;
    std::int64_t batch_, M_, N_, K_;
    bool ta_, tb_;
    View3<Scalar, Exec> A_, B_, C_;
  };
};

std::vector<Shape> with_trans(std::vector<Shape> shapes) {
  for (auto& s : shapes)
    if (std::none_of(s.dims.begin(), s.dims.end(), [](auto& d) { return d.first == "ta"; }))
      s.dims.push_back({"ta", 0}), s.dims.push_back({"tb", 0});
  return shapes;
}

}  // namespace

std::vector<KernelInfo> gemm_kernels() {
  const std::string counting =
      "2 M N K FLOPs per batch entry (alpha, beta scaling not counted); bytes: compulsory traffic, "
      "A, B read once and C written once ((M K + K N + M N) scalars per batch entry, beta = 0)";
  KernelInfo g;
  g.name = "gemm";
  g.family = "gemm";
  g.counting = counting;
  g.params = {"M", "N", "K", "ta", "tb"};
  g.dtypes = real_dtypes;
  // Host blocks follow the CPU's caches (kernels/gemm_blocks.hpp; with the smallest
  // assumed caches 60 x 384 x 256 float32 with AVX2), micro-tiles the ISA (6 x 32 and
  // 6 x 64 with AVX-512, 6 x 8 and 6 x 16 with AVX2): the test shapes cross micro-tile
  // edges in every dimension, with every transpose combination, and give teams several
  // row blocks and uneven columns; unit.kernels runs them again at the blocks of tiny
  // and of large caches.
  g.test_shapes = {{{"M", 37}, {"N", 53}, {"K", 29}, {"ta", 0}, {"tb", 0}},
                   {{"M", 131}, {"N", 300}, {"K", 517}, {"ta", 0}, {"tb", 0}},
                   {{"M", 192}, {"N", 512}, {"K", 512}, {"ta", 0}, {"tb", 0}},  // whole float64 blocks
                   {{"M", 100}, {"N", 70}, {"K", 300}, {"ta", 1}, {"tb", 0}},
                   {{"M", 61}, {"N", 130}, {"K", 45}, {"ta", 0}, {"tb", 1}},
                   {{"M", 200}, {"N", 33}, {"K", 260}, {"ta", 1}, {"tb", 1}},
                   {{"M", 389}, {"N", 600}, {"K", 270}, {"ta", 0}, {"tb", 0}},  // teams of several row blocks
                   {{"M", 1}, {"N", 1}, {"K", 1}, {"ta", 0}, {"tb", 0}}};
  g.quick_shapes = with_trans({{{"M", 1024}, {"N", 1024}, {"K", 1024}}});
  g.full_shapes = with_trans({{{"M", 512}, {"N", 512}, {"K", 512}},
                              {{"M", 2048}, {"N", 2048}, {"K", 2048}},
                              {{"M", 2048}, {"N", 3072}, {"K", 768}},   // MLP up-projection
                              {{"M", 2048}, {"N", 768}, {"K", 3072}}}); // MLP down-projection
  g.flops = [](const Shape& s, Dtype) { return gemm_flops(double(s["M"]), double(s["N"]), double(s["K"])); };
  g.bytes = [](const Shape& s, Dtype t) {
    return gemm_bytes(double(s["M"]), double(s["N"]), double(s["K"]), double(size_of(t)));
  };
  g.make = &make_real<GemmInstance<Portable, false>::template Of>;

  KernelInfo b = g;
  b.name = "gemm_batched";
  b.params = {"batch", "M", "N", "K", "ta", "tb"};
  b.test_shapes = {{{"batch", 3}, {"M", 17}, {"N", 33}, {"K", 9}, {"ta", 0}, {"tb", 0}},
                   {{"batch", 4}, {"M", 64}, {"N", 64}, {"K", 64}, {"ta", 0}, {"tb", 1}},
                   {{"batch", 2}, {"M", 100}, {"N", 270}, {"K", 300}, {"ta", 1}, {"tb", 0}}};
  b.quick_shapes = with_trans({{{"batch", 32}, {"M", 128}, {"N", 128}, {"K", 64}}});
  b.full_shapes = with_trans({{{"batch", 64}, {"M", 256}, {"N", 256}, {"K", 64}},
                              {{"batch", 96}, {"M", 512}, {"N", 512}, {"K", 64}},
                              {{"batch", 256}, {"M", 32}, {"N", 32}, {"K", 32}}});
  b.flops = [](const Shape& s, Dtype) {
    return gemm_flops(double(s["M"]), double(s["N"]), double(s["K"]), double(s["batch"]));
  };
  b.bytes = [](const Shape& s, Dtype t) {
    return gemm_bytes(double(s["M"]), double(s["N"]), double(s["K"]), double(size_of(t)), double(s["batch"]));
  };
  b.make = &make_real<GemmInstance<Portable, true>::template Of>;

  // C += op(A) op(B): what a weight-gradient GEMM does when gradients accumulate over
  // micro-batches. Same shapes; C is read as well as written.
  KernelInfo acc = g;
  acc.name = "gemm_accumulate";
  acc.counting =
      "2 M N K FLOPs (the additions into C not counted); bytes: compulsory traffic, A, B read once, C read "
      "and written once ((M K + K N + 2 M N) scalars)";
  acc.bytes = [](const Shape& s, Dtype t) {
    return gemm_bytes(double(s["M"]), double(s["N"]), double(s["K"]), double(size_of(t)), 1, true);
  };
  acc.make = &make_real<GemmInstance<Portable, false, true>::template Of>;
  std::vector<KernelInfo> all{g, b, acc};

#ifdef SEXTANT_HAVE_KOKKOS_KERNELS
  // The vendor path: the same operators by the BLAS library Kokkos Kernels was built
  // with. A family of their own, so that operator models stay per path.
  const std::pair<const KernelInfo*, decltype(g.make)> vendor[] = {
      {&g, &make_real<GemmInstance<Vendor, false>::template Of>},
      {&b, &make_real<GemmInstance<Vendor, true>::template Of>},
      {&acc, &make_real<GemmInstance<Vendor, false, true>::template Of>}};
  for (const auto& [portable, make] : vendor) {
    KernelInfo v = *portable;
    v.name = "vendor_" + portable->name;
    v.family = "vendor_gemm";
    v.counting = portable->counting + "; computed by KokkosBlas::gemm on the BLAS TPL";
    v.make = make;
    all.push_back(std::move(v));
  }
#endif
  return all;
}

}  // namespace sextant::kernels::descriptors

namespace sextant::kernels {

GemmBlocks gemm_blocks(Dtype dtype) {
  using descriptors::Exec;
  if (dtype == Dtype::float64) return GemmTiling<Exec, double>::blocks();
  if (dtype == Dtype::float32) return GemmTiling<Exec, float>::blocks();
  throw std::invalid_argument("the portable GEMM has no " + std::string(to_string(dtype)) + " version");
}

}  // namespace sextant::kernels
