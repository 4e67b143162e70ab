#pragma once
// Data-parallel gradient synchronisation, bucket by bucket in backward order (buckets are
// contiguous ranges of the flat gradient buffer, params.hpp):
// - allreduce (sum) of each bucket, or with ZeRO a reduce_scatter that leaves each dp
//   rank the sum of its block of every bucket (the optimizer then updates only that
//   block; with ZeRO-1 optimizer.hpp allgathers the parameters, with ZeRO-3 the
//   parameters stay sharded and each unit's bucket is gathered before every use:
//   gather(), release());
// - without overlap, bucket after bucket once backward is done (blocking);
// - with overlap, a non-blocking collective per bucket started as soon as the last
//   micro-batch's backward has made its gradients final (GradientSink::ready), polled
//   with MPI_Testall after every later kernel (Poller: MPI without a progress thread
//   only advances a collective inside MPI calls), and waited for before the optimizer.
// - stale-synchronous (TrainConfig::staleness s): nothing in the step; after the update
//   the optimizer copies this step's gradients into slot t % (s + 1) of a ring and starts
//   their allreduce there (send_stale), polled like the overlapped ones through the next
//   s steps, and step t + s waits for it and applies it (stale_gradients).
// Gradients are sums over micro-batches and ranks of per-token means over the global
// batch (the loss scale), so the sum is the global mean gradient: no division here.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/counts.hpp"
#include "suites/common/mpi.hpp"
#include "suites/train/layout.hpp"
#include "suites/train/model.hpp"
#include "suites/train/params.hpp"
#include "suites/train/recorder.hpp"

namespace sextant::train {

template <class S>
class DpSync : public GradientSink, public Poller, public ParamUnits {
 public:
  // poison_released (a test hook): what a release frees is overwritten with NaN, so that
  // a use without its gather shows in the loss.
  DpSync(ParamStore<S>& store, const Layout& layout, int zero, bool overlap, WaitMode wait, Recorder& rec,
         bool poison_released = false, int staleness = 0, bool compressed = false)
      : store_(store), comm_(layout.dp_comm), dp_(layout.dp), dp_rank_(layout.dp_rank),
        sharded_(zero >= 1 && layout.dp > 1), params_sharded_(zero == 3 && layout.dp > 1),
        overlap_(overlap && layout.dp > 1), poison_(poison_released), compressed_(compressed), staleness_(staleness),
        wait_(wait), rec_(rec) {
    std::int64_t shard = 0;
    for (const auto& b : store_.layout().buckets) {
      shard_offsets_.push_back(shard);
      shard += b.elements / dp_;
    }
    if (sharded_) shard_grads_ = V1<S>("sextant::train::shard_grads", shard);
    requests_.assign(store_.layout().buckets.size(), MPI_REQUEST_NULL);
    if (staleness_ > 0) {
      const std::int64_t n = store_.grads().extent(0);
      ring_ = V1<S>("sextant::train::stale_gradients", n * (staleness_ + 1));
      ring_requests_.assign(staleness_ + 1, std::vector<MPI_Request>(store_.layout().buckets.size(), MPI_REQUEST_NULL));
    }
  }
  // Stale: the allreduces of the last steps, never applied, completed after training
  // (their buffers must outlive them).
  void drain() {
    for (auto& slot : ring_requests_) wait_all(slot, wait_);
  }

  bool stale() const { return staleness_ > 0; }
  int staleness() const { return staleness_; }

  // Stale: the dp-summed gradients of step t - staleness (steps count from 1), waited
  // for; none (a null view) in the first `staleness` steps.
  U1<S> stale_gradients(int t) {
    if (t <= staleness_) return {};
    const int slot = (t - staleness_) % (staleness_ + 1);
    auto& requests = ring_requests_[slot];
    const double t0 = MPI_Wtime();
    wait_all(requests, wait_);
    rec_.add_comm(CommKind::dp, MPI_Wtime() - t0);
    return ring_slot(slot);
  }

  // Stale: step t's gradients copied into their slot and their allreduce started there.
  void send_stale(int t) {
    const int slot = t % (staleness_ + 1);
    const U1<S> copy = ring_slot(slot);
    const auto grads = store_.grads();
    const std::int64_t n = grads.extent(0);
    rec_.compute([&] { Kokkos::deep_copy(copy, grads); },
                 [&] {
                   return model::ComputeOp{"optimizer.stale_copy", std::string(kernels::family_of("stream_copy")),
                                           kv({{"n", n}}), 0, kernels::stream_bytes(kernels::StreamOp::copy, double(n), sizeof(S)),
                                           "stream_copy", {}};
                 });
    if (dp_ == 1) return;
    for (int k = 0; k < int(store_.layout().buckets.size()); ++k)
      rec_.comm(CommKind::dp_sync, [&] { start(k, copy.data(), ring_requests_[slot][k]); }, [&] { return describe(k); });
  }

  bool sharded() const { return sharded_; }
  bool params_sharded() const { return params_sharded_; }  // ZeRO-3: the stage gathers (units())
  ParamUnits* units() { return params_sharded_ ? this : nullptr; }
  bool overlapped() const { return overlap_; }
  // ZeRO: this rank's block of bucket k, and its reduced gradients.
  std::int64_t block(int k) const { return store_.layout().buckets[k].elements / dp_; }
  std::int64_t block_offset(int k) const { return store_.layout().buckets[k].offset + dp_rank_ * block(k); }
  // Where block k lies in this rank's shard (its blocks back to back): its reduced
  // gradients, and the optimizer's state for it.
  std::int64_t shard_offset(int k) const { return shard_offsets_[k]; }
  U1<S> shard_grads(int k) const { return U1<S>(shard_grads_.data() + shard_offsets_[k], block(k)); }
  std::int64_t shard_elements() const { return shard_grads_.extent(0); }

  void begin_step() {
    launched_ = 0;
    all_done_ = false;
  }

  void ready(int last_param) override {
    const auto& buckets = store_.layout().buckets;
    while (launched_ < int(buckets.size()) && buckets[launched_].last_param <= last_param) {
      const int k = launched_++;
      rec_.comm(CommKind::dp_sync, [&] { start(k); }, [&] { return describe(k); });
    }
  }

  void poll() override {
    if (staleness_ > 0) {
      const double t0 = MPI_Wtime();
      for (auto& slot : ring_requests_) {
        int done = 0;
        SEXTANT_MPI_CHECK(MPI_Testall(int(slot.size()), slot.data(), &done, MPI_STATUSES_IGNORE));
      }
      rec_.add_comm(CommKind::dp, MPI_Wtime() - t0);
      return;
    }
    if (launched_ == 0 || all_done_) return;
    const double t0 = MPI_Wtime();
    int done = 0;
    SEXTANT_MPI_CHECK(MPI_Testall(launched_, requests_.data(), &done, MPI_STATUSES_IGNORE));
    all_done_ = done && launched_ == int(requests_.size());
    rec_.add_comm(CommKind::dp, MPI_Wtime() - t0);
  }

  void gather(int param) override {
    const int k = bucket_of(param);
    S* bucket = store_.params().data() + store_.layout().buckets[k].offset;
    const std::string unit = model::param_unit(store_.layout().specs[param].name);
    rec_.comm(
        CommKind::dp_params,
        [&] {
          MPI_Request r;
          SEXTANT_MPI_CHECK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, bucket, int(block(k)), mpi_type<S>(),
                                           comm_, &r));
          wait(r, wait_);
        },
        [&] {
          return model::CommOp{unit + ".params.allgather", model::Traffic::dp, "allgather", double(block(k)) * sizeof(S), dp_};
        });
  }

  void release(int param) override {
    if (!poison_) return;  // nothing to free: the gathered copy is the buffer's own place
    const int k = bucket_of(param);
    const Bucket& b = store_.layout().buckets[k];
    const std::int64_t n = block(k), own = dp_rank_ * n;
    auto bucket = Kokkos::subview(store_.params(), Kokkos::make_pair(b.offset, b.offset + b.elements));
    const S nan = std::numeric_limits<S>::quiet_NaN();
    Kokkos::deep_copy(Kokkos::subview(bucket, Kokkos::make_pair(std::int64_t(0), own)), nan);
    Kokkos::deep_copy(Kokkos::subview(bucket, Kokkos::make_pair(own + n, b.elements)), nan);
    Kokkos::fence();
  }

  // After the pipeline has drained: every bucket reduced on return. Compressed, the
  // optimizer step syncs them (optimizer.hpp).
  void finish() {
    if (dp_ == 1 || staleness_ > 0 || compressed_) return;
    const int n = int(store_.layout().buckets.size());
    if (!overlap_) {
      for (int k = 0; k < n; ++k)
        rec_.comm(
            CommKind::dp_sync,
            [&] {
              start(k);
              wait(requests_[k], wait_);
            },
            [&] { return describe(k); });
      return;
    }
    ready(store_.layout().buckets.back().last_param);  // normally all started already
    const double t0 = MPI_Wtime();
    wait_all(requests_, wait_);
    rec_.add_comm(CommKind::dp, MPI_Wtime() - t0);
  }

 private:
  void start(int k) { start(k, store_.grads().data(), requests_[k]); }
  void start(int k, S* grads, MPI_Request& request) {
    const Bucket& b = store_.layout().buckets[k];
    S* g = grads + b.offset;
    if (sharded_)
      SEXTANT_MPI_CHECK(MPI_Ireduce_scatter_block(g, shard_grads_.data() + shard_offsets_[k], int(block(k)),
                                                  mpi_type<S>(), MPI_SUM, comm_, &request));
    else
      SEXTANT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, g, int(b.elements), mpi_type<S>(), MPI_SUM, comm_, &request));
  }

  U1<S> ring_slot(int slot) const {
    const std::int64_t n = store_.grads().extent(0);
    return U1<S>(ring_.data() + slot * n, n);
  }

  int bucket_of(int param) const {
    const auto& buckets = store_.layout().buckets;
    for (int k = 0; k < int(buckets.size()); ++k)
      if (buckets[k].first_param <= param && param <= buckets[k].last_param) return k;
    throw std::logic_error("sextant::train: parameter " + std::to_string(param) + " is in no bucket");
  }

  model::CommOp describe(int k) const {
    const std::string name = "dp.bucket" + std::to_string(k);
    if (sharded_)
      return {name + ".reduce_scatter", model::Traffic::dp, "reduce_scatter", double(block(k)) * sizeof(S), dp_};
    return {name + ".allreduce", model::Traffic::dp, "allreduce", double(store_.layout().buckets[k].elements) * sizeof(S), dp_};
  }

  ParamStore<S>& store_;
  MPI_Comm comm_;
  int dp_, dp_rank_;
  bool sharded_, params_sharded_, overlap_, poison_, compressed_;
  int staleness_;
  WaitMode wait_;
  Recorder& rec_;
  std::vector<std::int64_t> shard_offsets_;
  V1<S> shard_grads_;
  std::vector<MPI_Request> requests_;
  int launched_ = 0;
  bool all_done_ = false;
  V1<S> ring_;                                           // stale: staleness + 1 gradient copies
  std::vector<std::vector<MPI_Request>> ring_requests_;  // stale: each slot's buckets
};

}  // namespace sextant::train
