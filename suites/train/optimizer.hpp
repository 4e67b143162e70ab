#pragma once
// The optimizer step: SGD (p -= lr g, the STREAM triad) or AdamW (kernels/adamw.hpp) on
// this rank's parameters; with ZeRO on its block of every bucket only (moments sized
// for the blocks: the memory ZeRO saves), with ZeRO-1 each block followed by an
// allgather that gives every dp rank the updated bucket (ZeRO-3 gathers a unit before
// each use instead). Then the gradients are cleared for the next step's accumulation.
#include <string>

#include "kernels/adamw.hpp"
#include "kernels/stream.hpp"
#include "suites/train/dp_sync.hpp"
#include "suites/train/proxy.hpp"

namespace sextant::train {

template <class S>
class OptimizerStep {
 public:
  OptimizerStep(const model::TrainConfig& c, const TrainRunOptions& o, ParamStore<S>& store, DpSync<S>& dp,
                const Layout& layout, Recorder& rec)
      : adamw_(c.optimizer == model::Optimizer::adamw), store_(store), dp_(dp), comm_(layout.dp_comm),
        dp_size_(layout.dp), wait_(o.wait), rec_(rec) {
    hp_.lr = o.lr;
    hp_.beta1 = o.beta1;
    hp_.beta2 = o.beta2;
    hp_.eps = o.eps;
    hp_.weight_decay = o.weight_decay;
    if (adamw_) {
      const std::int64_t n = dp.sharded() ? dp.shard_elements() : store.layout().parameters;
      m_ = V1<S>("sextant::train::adam_m", n);
      v_ = V1<S>("sextant::train::adam_v", n);
    }
  }

  void step(int t) {  // t >= 1
    hp_.step = t;
    rec_.set_pass(Pass::optimizer);
    S* p = store_.params().data();
    if (dp_.sharded()) {
      std::int64_t moment = 0;
      for (int k = 0; k < int(store_.layout().buckets.size()); ++k) {
        const std::int64_t n = dp_.block(k);
        const std::string name = "optimizer.bucket" + std::to_string(k);
        update(name, U1<S>(p + dp_.block_offset(k), n), dp_.shard_grads(k), moment);
        moment += n;
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
  void update(const std::string& name, U1<S> p, U1<S> g, std::int64_t moment) {
    const std::int64_t n = p.extent(0);
    if (adamw_) {
      U1<S> m(m_.data() + moment, n), v(v_.data() + moment, n);
      rec_.compute([&] { kernels::adamw_update(exec_, p, g, m, v, hp_); },
                   [&] {
                     return model::ComputeOp{name, "optimizer", kv({{"n", n}}), kernels::adamw_flops(n),
                                             kernels::adamw_bytes(n, sizeof(S)), "adamw_update", {}};
                   });
    } else {
      rec_.compute([&] { kernels::stream_triad(exec_, p, p, g, S(-hp_.lr)); },
                   [&] {
                     return model::ComputeOp{name, "stream", kv({{"n", n}}),
                                             kernels::stream_flops(kernels::StreamOp::triad, n),
                                             kernels::stream_bytes(kernels::StreamOp::triad, n, sizeof(S)), "stream_triad", {}};
                   });
    }
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
  WaitMode wait_;
  Recorder& rec_;
  kernels::AdamWParams hp_;
  V1<S> m_, v_;
};

}  // namespace sextant::train
