// Descriptors of unfused scaled dot-product attention, forward and backward.
#include "kernels/attention.hpp"

#include <cmath>

#include "kernels/descriptors/support.hpp"
#include "kernels/reference/attention.hpp"

namespace sextant::kernels::descriptors {
namespace {

// Rows [head * rows, (head + 1) * rows) of a (BH, rows, cols) array.
std::vector<double> head_of(const std::vector<double>& all, std::int64_t head, std::int64_t rows, std::int64_t cols) {
  auto begin = all.begin() + head * rows * cols;
  return std::vector<double>(begin, begin + rows * cols);
}

// Appends one head's reference result, re-indexed into the whole (BH, ...) array.
void append(reference::Bounded& all, const reference::Bounded& one, std::int64_t head) {
  const std::size_t offset = std::size_t(head) * one.size();
  for (std::size_t k = 0; k < one.size(); ++k) {
    all.index.push_back(offset + one.flat_index(k));
    all.value.push_back(one.value[k]);
    all.bound.push_back(one.bound[k]);
  }
}

template <bool Backward>
struct Attention {
  template <class Scalar>
  class Of final : public Instance {
   public:
    Of(const Shape& s, std::uint64_t seed)
        : BH_(s["BH"]), L_(s["L"]), D_(s["D"]), scale_(Scalar(1.0 / std::sqrt(double(s["D"])))),
          q_(alloc("q", D_)), k_(alloc("k", D_)), v_(alloc("v", D_)), o_(alloc("o", D_)), p_(alloc("p", L_)),
          dout_(alloc("dout", Backward ? D_ : 0)), dp_(alloc("dp", Backward ? L_ : 0)),
          dq_(alloc("dq", Backward ? D_ : 0)), dk_(alloc("dk", Backward ? D_ : 0)), dv_(alloc("dv", Backward ? D_ : 0)) {
      fill_uniform(exec_, q_, seed, 0.1, 1.0);
      fill_uniform(exec_, k_, seed + 1, 0.1, 1.0);
      fill_uniform(exec_, v_, seed + 2, 0.1, 1.0);
      if (Backward) {
        fill_uniform(exec_, dout_, seed + 3, 0.1, 1.0);
        attention_forward(exec_, q_, k_, v_, p_, o_, scale_);  // P from a real forward pass
      }
      exec_.fence();
    }

    void run() override {
      if constexpr (Backward)
        attention_backward(exec_, q_, k_, v_, p_, dout_, dp_, dq_, dk_, dv_, scale_);
      else
        attention_forward(exec_, q_, k_, v_, p_, o_, scale_);
      exec_.fence();
    }

    Validation validate() override {
      Validation v;
      const double u = unit_roundoff<Scalar>(), scale = as_double(scale_);
      const auto q = to_host(q_), k = to_host(k_), vv = to_host(v_);
      // Batch-heads are independent: on large shapes the reference checks a spread of them.
      const double head_cost = double(L_) * L_ * D_ * (Backward ? 4 : 2);
      const auto heads = reference::sample_rows(BH_, head_cost, reference_budget);
      const reference::AttentionShape one{1, L_, L_, D_};
      if constexpr (Backward) {
        poison(dq_);
        poison(dk_);
        poison(dv_);
        run();
        const auto p = to_host(p_), dout = to_host(dout_);
        reference::Bounded dq, dk, dv;
        for (std::int64_t h : heads) {
          auto r = reference::attention_backward(one, head_of(q, h, L_, D_), head_of(k, h, L_, D_),
                                                 head_of(vv, h, L_, D_), head_of(p, h, L_, L_),
                                                 head_of(dout, h, L_, D_), scale, u);
          append(dq, r[0], h);
          append(dk, r[1], h);
          append(dv, r[2], h);
        }
        compare(v, "dQ", to_host(dq_), dq);
        compare(v, "dK", to_host(dk_), dk);
        compare(v, "dV", to_host(dv_), dv);
      } else {
        poison(o_);
        poison(p_);
        run();
        reference::Bounded o, p;
        for (std::int64_t h : heads) {
          auto r = reference::attention_forward(one, head_of(q, h, L_, D_), head_of(k, h, L_, D_),
                                                head_of(vv, h, L_, D_), scale, u);
          append(o, r[0], h);
          append(p, r[1], h);
        }
        compare(v, "O", to_host(o_), o);
        compare(v, "P", to_host(p_), p);
      }
      return v;
    }

   private:
    View3<Scalar, Exec> alloc(const std::string& label, std::int64_t cols) const {
      return View3<Scalar, Exec>(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), cols ? BH_ : 0, L_, cols);
    }

    Exec exec_;
    std::int64_t BH_, L_, D_;
    Scalar scale_;
    View3<Scalar, Exec> q_, k_, v_, o_, p_, dout_, dp_, dq_, dk_, dv_;
  };
};

}  // namespace

std::vector<KernelInfo> attention_kernels() {
  KernelInfo f;
  f.name = "attention_forward";
  f.family = "attention";
  f.pass = "forward";
  f.counting =
      "4 BH L^2 D (Q K^T and P V) + 5 BH L^2 (softmax) FLOPs; bytes: every step's operands moved once, "
      "the materialised L x L scores counted at each of their 4 reads and writes: BH (4 L D + 4 L^2) scalars";
  f.params = {"BH", "L", "D"};
  f.dtypes = real_dtypes;
  f.test_shapes = {{{"BH", 2}, {"L", 7}, {"D", 5}}, {{"BH", 3}, {"L", 33}, {"D", 16}}, {{"BH", 2}, {"L", 100}, {"D", 64}}};
  f.quick_shapes = {{{"BH", 8}, {"L", 256}, {"D", 64}}};
  f.full_shapes = {{{"BH", 32}, {"L", 512}, {"D", 64}}, {{"BH", 16}, {"L", 1024}, {"D", 128}}};
  f.flops = [](const Shape& s, Dtype) {
    return attention_forward_flops(double(s["BH"]), double(s["L"]), double(s["L"]), double(s["D"]));
  };
  f.exps = [](const Shape& s, Dtype) { return attention_forward_exps(double(s["BH"]), double(s["L"]), double(s["L"])); };
  f.bytes = [](const Shape& s, Dtype t) {
    return attention_forward_bytes(double(s["BH"]), double(s["L"]), double(s["L"]), double(s["D"]), double(size_of(t)));
  };
  f.make = &make_real<Attention<false>::template Of>;

  KernelInfo b = f;
  b.name = "attention_backward";
  b.pass = "backward";
  b.counting =
      "8 BH L^2 D (four GEMMs) + 4 BH L^2 (softmax backward) FLOPs; bytes: every step's operands moved "
      "once: BH (8 L D + 7 L^2) scalars";
  b.flops = [](const Shape& s, Dtype) {
    return attention_backward_flops(double(s["BH"]), double(s["L"]), double(s["L"]), double(s["D"]));
  };
  b.exps = nullptr;
  b.bytes = [](const Shape& s, Dtype t) {
    return attention_backward_bytes(double(s["BH"]), double(s["L"]), double(s["L"]), double(s["D"]), double(size_of(t)));
  };
  b.make = &make_real<Attention<true>::template Of>;
  return {f, b};
}

}  // namespace sextant::kernels::descriptors
