#pragma once
// The parameters of one stage on one tensor-parallel rank, in one flat buffer (and their
// gradients in another), ordered as their gradients become final in backward, so that a
// gradient bucket is a contiguous range and can be reduced as soon as backward passes it.
//
// Initialisation does not depend on the parallel layout: every element of a full tensor
// has a value drawn from (seed, tensor name, its index in the full tensor), and a rank
// computes only the elements of its shard. Any layout therefore starts from the same model.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common.hpp"
#include "models/train_plan.hpp"
#include "suites/train/tensors.hpp"

namespace sextant::train {

// How a tensor is split over tensor-parallel ranks (Megatron): replicated (layernorms,
// position embedding), by rows (row-parallel attn_out and fc2, the vocabulary-parallel
// token embedding), or by columns (column-parallel QKV, fc1 and its bias, the logits),
// where the columns form `groups` equal groups each split on its own (QKV: q, k and v each
// keep their heads' columns).
enum class Shard { replicated, rows, columns };
enum class Init { uniform, ones, zeros };

struct ParamSpec {
  std::string name;
  std::int64_t rows = 1, cols = 1;  // the full tensor (a vector has rows = 1)
  Shard shard = Shard::replicated;
  int groups = 1;
  Init init = Init::uniform;
  double stddev = 0;  // for Init::uniform: uniform on [-sqrt(3) sd, sqrt(3) sd]
  // The name its values are drawn by, where it differs: an expert is named by its index on
  // the rank ("layer0.expert1.", model::expert_parameter) and drawn by its index in the
  // model, so that every ep layout starts from the same experts.
  std::string stream;

  std::int64_t local_rows(int tp) const { return shard == Shard::rows ? rows / tp : rows; }
  std::int64_t local_cols(int tp) const { return shard == Shard::columns ? cols / tp : cols; }
  std::int64_t local_size(int tp) const { return local_rows(tp) * local_cols(tp); }
};

// This stage's parameters, in backward order (the same list as models/train_plan.cpp's,
// with what initialising and sharding them needs).
// ep_rank: which of the model's experts the rank holds (E / ep of them from ep_rank E / ep).
std::vector<ParamSpec> stage_parameter_specs(const model::TrainConfig& c, int layers_first, int layers_count,
                                             bool first_stage, bool last_stage, int ep_rank = 0);

struct Bucket {
  std::int64_t offset = 0, elements = 0;  // in the flat buffer; elements padded (ZeRO)
  int first_param = 0, last_param = 0;    // indices into the spec list, inclusive
};

struct FlatLayout {
  std::vector<ParamSpec> specs;
  std::vector<std::int64_t> offsets;  // per spec
  std::vector<Bucket> buckets;
  std::int64_t total = 0;             // elements, padding included
  std::int64_t parameters = 0;        // elements, padding excluded
};

// Buckets of whole parameters up to bucket_bytes (a larger parameter alone), or with
// by_unit one per parameter unit (ZeRO-3: model::param_unit), each padded to a multiple
// of pad_to elements (dp with ZeRO, so every rank owns an equal block). With own_experts
// (ep > 1) the experts, which come last, are in no bucket: the rank's own.
FlatLayout flat_layout(std::vector<ParamSpec> specs, int tp, double bucket_bytes, int scalar_bytes, int pad_to,
                       bool by_unit = false, bool own_experts = false);

template <class S>
class ParamStore {
 public:
  // tail: zero elements allocated past the end, never updated (the vocabulary-parallel
  // embedding's extra zero row reads them).
  ParamStore(FlatLayout layout, int tp_rank, int tp, std::uint64_t seed, std::int64_t tail)
      : layout_(std::move(layout)), tp_(tp) {
    params_ = V1<S>("sextant::train::params", layout_.total + tail);  // zeroed: padding stays 0
    grads_ = V1<S>("sextant::train::grads", layout_.total);
    for (std::size_t i = 0; i < layout_.specs.size(); ++i) initialise(int(i), tp_rank, seed);
    Kokkos::fence();
  }

  const FlatLayout& layout() const { return layout_; }
  int index(const std::string& name) const {
    for (std::size_t i = 0; i < layout_.specs.size(); ++i)
      if (layout_.specs[i].name == name) return int(i);
    throw std::logic_error("sextant::train: no parameter " + name);
  }
  // Local shard as a matrix or vector; extra_rows reaches past the end (see tail).
  U2<S> param2(int i, std::int64_t extra_rows = 0) const {
    const auto& s = layout_.specs[i];
    return U2<S>(params_.data() + layout_.offsets[i], s.local_rows(tp_) + extra_rows, s.local_cols(tp_));
  }
  U2<S> grad2(int i) const {
    const auto& s = layout_.specs[i];
    return U2<S>(grads_.data() + layout_.offsets[i], s.local_rows(tp_), s.local_cols(tp_));
  }
  U1<S> param1(int i) const { return U1<S>(params_.data() + layout_.offsets[i], layout_.specs[i].local_size(tp_)); }
  // Gradients of `count` parameters adjacent in the buffer, from parameter i on.
  U1<S> grad1(int i, int count = 1) const {
    std::int64_t n = 0;
    for (int k = i; k < i + count; ++k) n += layout_.specs[k].local_size(tp_);
    return U1<S>(grads_.data() + layout_.offsets[i], n);
  }
  V1<S> params() const { return params_; }
  V1<S> grads() const { return grads_; }

  // Public only because CUDA forbids device lambdas in private member functions.
  void initialise(int i, int tp_rank, std::uint64_t seed) {
    const ParamSpec& s = layout_.specs[i];
    U1<S> dst(params_.data() + layout_.offsets[i], s.local_size(tp_));
    if (s.init != Init::uniform) {
      Kokkos::deep_copy(dst, S(s.init == Init::ones ? 1 : 0));
      return;
    }
    // The tensor's stream: FNV-1a of its name, mixed with the seed.
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char ch : s.stream.empty() ? s.name : s.stream) h = (h ^ ch) * 1099511628211ull;
    const std::uint64_t stream = kernels::splitmix64(seed ^ h);
    const double amp = 1.7320508075688772 * s.stddev;
    const std::int64_t lrows = s.local_rows(tp_), lcols = s.local_cols(tp_), cols = s.cols;
    const std::int64_t row0 = s.shard == Shard::rows ? tp_rank * lrows : 0;
    const bool by_cols = s.shard == Shard::columns;
    const std::int64_t group = cols / s.groups, lgroup = group / (by_cols ? tp_ : 1);
    Kokkos::parallel_for(
        "sextant::train::init", Kokkos::RangePolicy<Exec>(0, lrows * lcols), KOKKOS_LAMBDA(const std::int64_t e) {
          const std::int64_t r = e / lcols, c = e % lcols;
          const std::int64_t gc = by_cols ? (c / lgroup) * group + tp_rank * lgroup + c % lgroup : c;
          const std::int64_t global = (row0 + r) * cols + gc;
          dst(e) = S(amp * (2 * kernels::uniform01(stream, std::uint64_t(global)) - 1));
        });
  }

 private:
  FlatLayout layout_;
  int tp_;
  V1<S> params_, grads_;
};

}  // namespace sextant::train
