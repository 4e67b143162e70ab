// Descriptors of the embedding gather (forward) and scatter-add (backward).
#include "kernels/embedding.hpp"

#include "kernels/descriptors/support.hpp"
#include "kernels/reference/elementwise.hpp"

namespace sextant::kernels::descriptors {
namespace {

using Index = std::int32_t;

template <bool Backward>
struct Embedding {
  template <class Scalar>
  class Of final : public Instance {
   public:
    Of(const Shape& s, std::uint64_t seed)
        : V_(s["vocab"]), T_(s["tokens"]), D_(s["dim"]),
          table_(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(Backward ? "dtable" : "table")), V_, D_),
          rows_(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(Backward ? "dout" : "out")), T_, D_),
          index_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "index"), T_) {
      fill_indices(exec_, index_, seed, V_);
      fill_uniform(exec_, Backward ? rows_ : table_, seed + 1, 0.1, 1.0);
      exec_.fence();
    }

    void run() override {
      if constexpr (Backward)
        embedding_backward(exec_, rows_, index_, table_);
      else
        embedding_forward(exec_, table_, index_, rows_);
      exec_.fence();
    }

    Validation validate() override {
      Validation v;
      const auto index = indices_to_host(index_);
      if constexpr (Backward) {
        poison(table_);
        run();
        compare(v, "dtable", to_host(table_),
                reference::embedding_backward(V_, D_, to_host(rows_), index, unit_roundoff<Scalar>()));
      } else {
        poison(rows_);
        run();
        compare(v, "out", to_host(rows_), reference::embedding_forward(D_, to_host(table_), index));
      }
      return v;
    }

   private:
    Exec exec_;
    std::int64_t V_, T_, D_;
    View2<Scalar, Exec> table_, rows_;
    View1<Index, Exec> index_;
  };
};

}  // namespace

std::vector<KernelInfo> embedding_kernels() {
  KernelInfo f;
  f.name = "embedding_forward";
  f.family = "embedding";
  f.pass = "forward";
  f.counting = "0 FLOPs; bytes: T rows of D gathered and written, T int32 indices read";
  f.params = {"vocab", "tokens", "dim"};
  f.dtypes = real_dtypes;
  f.test_shapes = {{{"vocab", 50}, {"tokens", 37}, {"dim", 5}},
                   {{"vocab", 1000}, {"tokens", 128}, {"dim", 64}},
                   {{"vocab", 17}, {"tokens", 300}, {"dim", 33}}};  // many repeated indices
  f.quick_shapes = {{{"vocab", 8192}, {"tokens", 4096}, {"dim", 512}}};
  f.full_shapes = {{{"vocab", 50257}, {"tokens", 8192}, {"dim", 768}}};
  f.flops = [](const Shape& s, Dtype) { return embedding_forward_flops(double(s["tokens"]), double(s["dim"])); };
  f.bytes = [](const Shape& s, Dtype t) {
    return embedding_forward_bytes(double(s["tokens"]), double(s["dim"]), double(size_of(t)), sizeof(Index));
  };
  f.make = &make_real<Embedding<false>::template Of>;

  KernelInfo b = f;
  b.name = "embedding_backward";
  b.pass = "backward";
  b.counting =
      "T D FLOPs (one atomic add per gradient element); bytes: the V x D gradient zeroed, T rows of dout "
      "read, T gradient rows read and written, T int32 indices read";
  b.flops = [](const Shape& s, Dtype) { return embedding_backward_flops(double(s["tokens"]), double(s["dim"])); };
  b.bytes = [](const Shape& s, Dtype t) {
    return embedding_backward_bytes(double(s["vocab"]), double(s["tokens"]), double(s["dim"]),
                                    double(size_of(t)), sizeof(Index));
  };
  b.make = &make_real<Embedding<true>::template Of>;
  return {f, b};
}

}  // namespace sextant::kernels::descriptors
