#pragma once
// The optimizer step: SGD (p -= lr g, the STREAM triad) or AdamW (kernels/adamw.hpp) on
// this rank's parameters; with ZeRO on its block of every bucket only (moments sized
// for the blocks: the memory ZeRO saves), with ZeRO-1 each block followed by an
// allgather that gives every dp rank the updated bucket (ZeRO-3 gathers a unit before
// each use instead); stale-synchronous, with the gradients of an earlier step
// (dp_sync.hpp). Then the gradients are cleared for the next step's accumulation.
// With sequence parallelism the step starts by summing the replicated parameters'
// gradients over tp (each rank's covers its tokens only): packed, one allreduce, unpacked.
// With compress=bf16 the dp gradient sync runs here too, before the update: the gradient
// converted to bfloat16, each bucket's allreduce (bfloat16_sum) on that copy, converted
// back (DpSync::finish leaves it).
// Mixed precision (W wider than S: TrainConfig::master): the optimizer keeps its own copy
// of its parameters (all of them, or with ZeRO its blocks) in W beside its moments; each
// update widens the gradients into W, updates that copy and narrows it into the step's
// parameters. The copy starts as the step's initial parameters, widened.
#include <string>
#include <type_traits>

#include "kernels/adamw.hpp"
#include "kernels/stream.hpp"
#include "kernels/counts.hpp"
#include "suites/train/dp_sync.hpp"
#include "suites/train/ops.hpp"
#include "suites/train/proxy.hpp"

namespace sextant::train {

template <class S, class W = S>
class OptimizerStep {
  static constexpr bool mixed = !std::is_same_v<S, W>;

 public:
  OptimizerStep(const model::TrainConfig& c, const TrainRunOptions& o, ParamStore<S>& store, DpSync<S>& dp,
                const Layout& layout, Recorder& rec)
      : adamw_(c.optimizer == model::Optimizer::adamw), store_(store), dp_(dp), comm_(layout.dp_comm),
        dp_size_(layout.dp), tp_comm_(layout.tp_comm), tp_size_(layout.tp), wait_(o.wait), rec_(rec) {
    hp_.lr = o.lr;
    hp_.beta1 = o.beta1;
    hp_.beta2 = o.beta2;
    hp_.eps = o.eps;
    hp_.weight_decay = o.weight_decay;
    const std::int64_t n = dp.sharded() ? dp.shard_elements() : store.layout().parameters;
    if (adamw_) {
      m_ = V1<W>("sextant::train::adam_m", n);
      v_ = V1<W>("sextant::train::adam_v", n);
    }
    if constexpr (mixed) {
      master_ = V1<W>("sextant::train::master", n);
      master_grads_ = V1<W>("sextant::train::master_grads", n);
      const S* p = store.params().data();
      if (dp.sharded())
        for (int k = 0; k < int(store.layout().buckets.size()); ++k)
          convert(exec_, p + dp.block_offset(k), master_.data() + dp.shard_offset(k), dp.block(k));
      else
        convert(exec_, p, master_.data(), n);
      exec_.fence();
    }
    if (c.sp) {
      const FlatLayout& f = store.layout();
      std::vector<std::int64_t> where;
      for (std::size_t i = 0; i < f.specs.size(); ++i)
        if (model::replicated_over_tp(f.specs[i].name))
          for (std::int64_t e = 0; e < f.specs[i].local_size(layout.tp); ++e) where.push_back(f.offsets[i] + e);
      sp_index_ = Kokkos::View<std::int64_t*, Mem>("sextant::train::sp_index", where.size());
      Kokkos::deep_copy(sp_index_, Kokkos::View<const std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                       where.data(), where.size()));
      sp_grads_ = V1<S>("sextant::train::sp_grads", where.size());
    }
    if (c.compress == model::Compression::bf16 && layout.dp > 1)
      grads_bf16_ = Kokkos::View<std::uint16_t*, Mem>("sextant::train::grads_bf16", store.layout().parameters);
  }

  void step(int t) {  // t >= 1
    hp_.step = t;
    rec_.set_pass(Pass::optimizer);
    if (sp_index_.extent(0) > 0) sum_replicated_grads();
    if (grads_bf16_.extent(0) > 0) sum_compressed_grads();
    S* p = store_.params().data();
    if (dp_.stale()) {
      // The gradients of `staleness` steps before (none yet in the first steps), then
      // this step's sent behind the next ones. AdamW's bias correction counts updates.
      hp_.step = t - dp_.staleness();
      const std::int64_t n = store_.layout().parameters;
      if (const U1<S> g = dp_.stale_gradients(t); g.data()) update("optimizer.update", U1<S>(p, n), U1<S>(g.data(), n), 0);
      dp_.send_stale(t);
    } else if (dp_.sharded()) {
      for (int k = 0; k < int(store_.layout().buckets.size()); ++k) {
        const std::int64_t n = dp_.block(k);
        const std::string name = "optimizer.bucket" + std::to_string(k);
        update(name, U1<S>(p + dp_.block_offset(k), n), dp_.shard_grads(k), dp_.shard_offset(k));
        if (dp_.params_sharded()) continue;
        S* bucket = p + store_.layout().buckets[k].offset;
        rec_.comm(
            CommKind::dp,
            [&] { allgather_in_place(bucket, n); },
            [&] { return model::CommOp{name + ".allgather", model::Traffic::dp, "allgather", double(n) * sizeof(S), dp_size_}; });
      }
    } else {
      const std::int64_t n = store_.layout().parameters;
      update("optimizer.update", U1<S>(p, n), U1<S>(store_.grads().data(), n), 0);
    }
    auto grads = store_.grads();
    const std::int64_t n = grads.extent(0);
    rec_.compute([&] { Kokkos::deep_copy(grads, S(0)); },
                 [&] { return model::ComputeOp{"optimizer.zero_grad", "stream", kv({{"n", n}}), 0, double(n) * sizeof(S), "fill", {}}; });
  }

 private:
  void sum_replicated_grads() {
    const std::int64_t n = sp_index_.extent(0);
    S* g = store_.grads().data();
    auto copy = [&](const char* name, auto&& run) {
      rec_.compute(run, [&] {
        return model::ComputeOp{name, std::string(kernels::family_of("stream_copy")), kv({{"n", n}}), 0,
                                kernels::stream_bytes(kernels::StreamOp::copy, double(n), sizeof(S)), "stream_copy", {}};
      });
    };
    copy("optimizer.sp_grads", [&] { pack_elements(exec_, sp_index_, g, sp_grads_.data()); });
    rec_.comm(
        CommKind::tp,
        [&] { allreduce(MPI_IN_PLACE, sp_grads_.data(), int(n), mpi_type<S>(), MPI_SUM, tp_comm_, wait_); },
        [&] {
          return model::CommOp{"optimizer.sp_grads.tp_allreduce", model::Traffic::tp, "allreduce", double(n) * sizeof(S), tp_size_};
        });
    copy("optimizer.sp_grads.unpack", [&] { unpack_elements(exec_, sp_index_, sp_grads_.data(), g); });
  }

  void sum_compressed_grads() {
    S* g = store_.grads().data();
    std::uint16_t* h = grads_bf16_.data();
    const std::int64_t n = grads_bf16_.extent(0);
    auto convert = [&](const char* name, const char* kernel, auto&& run) {
      rec_.compute(run, [&] {
        return model::ComputeOp{name, std::string(kernels::family_of(kernel)), kv({{"n", n}}), 0,
                                kernels::bfloat16_convert_bytes(double(n), sizeof(S)), kernel, {}};
      });
    };
    convert("optimizer.compress", "to_bfloat16", [&] { to_bfloat16(exec_, g, h, n); });
    const auto& buckets = store_.layout().buckets;
    for (std::size_t k = 0; k < buckets.size(); ++k)
      rec_.comm(
          CommKind::dp,
          [&] {
            allreduce(MPI_IN_PLACE, h + buckets[k].offset, int(buckets[k].elements), MPI_UINT16_T, bfloat16_sum(),
                      comm_, wait_);
          },
          [&] {
            model::CommOp op{"dp.bucket" + std::to_string(k) + ".allreduce", model::Traffic::dp, "allreduce",
                             double(buckets[k].elements) * 2, dp_size_};
            op.dtype = "bfloat16";
            return op;
          });
    convert("optimizer.decompress", "from_bfloat16", [&] { from_bfloat16(exec_, h, g, n); });
  }

  // The update of p (the state at `moment` on): in place, or with mixed precision on the
  // master copy between a widening of the gradients and a narrowing into p.
  void update(const std::string& name, U1<S> p, U1<S> g, std::int64_t moment) {
    const std::int64_t n = p.extent(0);
    if constexpr (mixed) {
      const U1<W> w(master_.data() + moment, n), gw(master_grads_.data() + moment, n);
      convert_op(name + ".widen", g.data(), gw.data(), n);
      update_in_place(name, w, gw, moment);
      convert_op(name + ".narrow", w.data(), p.data(), n);
    } else {
      update_in_place(name, p, g, moment);
    }
  }

  void update_in_place(const std::string& name, U1<W> p, U1<W> g, std::int64_t moment) {
    const std::int64_t n = p.extent(0);
    const std::string dtype = mixed ? dtype_name<W>() : "";  // the plan names the master's type only
    if (adamw_) {
      U1<W> m(m_.data() + moment, n), v(v_.data() + moment, n);
      rec_.compute([&] { kernels::adamw_update(exec_, p, g, m, v, hp_); },
                   [&] {
                     return model::ComputeOp{name, "optimizer", kv({{"n", n}}), kernels::adamw_flops(n),
                                             kernels::adamw_bytes(n, sizeof(W)), "adamw_update", {}, dtype};
                   });
    } else {
      rec_.compute([&] { kernels::stream_triad(exec_, p, p, g, W(-hp_.lr)); },
                   [&] {
                     return model::ComputeOp{name, "stream", kv({{"n", n}}),
                                             kernels::stream_flops(kernels::StreamOp::triad, n),
                                             kernels::stream_bytes(kernels::StreamOp::triad, n, sizeof(W)), "stream_triad",
                                             {}, dtype};
                   });
    }
  }

  template <class From, class To>
  void convert_op(const std::string& name, const From* from, To* to, std::int64_t n) {
    const std::string kernel = "to_" + dtype_name<To>();
    rec_.compute([&] { convert(exec_, from, to, n); },
                 [&] {
                   return model::ComputeOp{name, std::string(kernels::family_of(kernel)), kv({{"n", n}}), 0,
                                           kernels::convert_bytes(double(n), sizeof(From), sizeof(To)), kernel, {}};
                 });
  }

  void allgather_in_place(S* bucket, std::int64_t block) {
    MPI_Request r;
    SEXTANT_MPI_CHECK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, bucket, int(block), mpi_type<S>(), comm_, &r));
    wait(r, wait_);
  }

  bool adamw_;
  Exec exec_;
  ParamStore<S>& store_;
  DpSync<S>& dp_;
  MPI_Comm comm_;
  int dp_size_;
  MPI_Comm tp_comm_;
  int tp_size_;
  WaitMode wait_;
  Recorder& rec_;
  kernels::AdamWParams hp_;
  V1<W> m_, v_;
  V1<W> master_, master_grads_;  // mixed precision: the optimizer's parameters, their gradients
  Kokkos::View<std::int64_t*, Mem> sp_index_;  // sp: where the replicated parameters' gradients lie
  V1<S> sp_grads_;
  Kokkos::View<std::uint16_t*, Mem> grads_bf16_;  // compress=bf16: the gradient on the wire
};

}  // namespace sextant::train
