#pragma once
// Where a step's time goes: every kernel and every communication of the proxy runs
// through a Recorder, which times it (kernels fenced, so the time is the kernel's), adds
// it to the rank's PhaseTimes, and, while tracing, records what ran in the vocabulary of
// models/train_plan.hpp so that a test can hold the execution against the plan.
//
// Descriptions are built lazily (only while tracing): op names are strings, and the
// proxy runs thousands of small kernels per second.
#include <mpi.h>

#include <Kokkos_Core.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "models/train_plan.hpp"
#include "suites/train/proxy.hpp"

namespace sextant::train {

enum class Pass { forward, backward, optimizer };
// dp_sync: the gradient sync, traced apart (the plan's dp_sync) in whichever pass issues
// it; dp: ZeRO's allgathers in the optimizer; dp_params: ZeRO-3's parameter gathers,
// traced with the forward or backward they serve. All three are timed as dp.
// ep: the experts' all-to-alls.
enum class CommKind { tp, pp, dp, dp_sync, dp_params, ep };

// Something with non-blocking communication in flight. MPI without a progress thread
// moves a message only inside MPI calls: a large send, or a gradient bucket's
// allreduce, would wait for the sender's next MPI call (often the end of its compute)
// and look like pipeline idle time on the receiver. Polled after every kernel.
struct Poller {
  virtual ~Poller() = default;
  virtual void poll() = 0;
};

class Recorder {
 public:
  void add_poller(Poller* p) { pollers_.push_back(p); }

  void start_step() { times_ = {}; }
  PhaseTimes& times() { return times_; }
  void set_pass(Pass p) { pass_ = p; }
  Pass pass() const { return pass_; }

  // Trace targets; nullptr stops recording. Compute and comm of the current pass go to
  // `phase`, the gradient sync (CommKind::dp_sync) to `dp_sync`.
  void trace_phase(model::Phase* phase) { phase_ = phase; }
  void trace_dp(std::vector<model::CommOp>* dp_sync) { dp_sync_ = dp_sync; }

  template <class Run, class Describe>
  void compute(Run&& run, Describe&& describe) {
    const double t0 = MPI_Wtime();
    run();
    Kokkos::fence();
    const double t = MPI_Wtime() - t0;
    switch (pass_) {
      case Pass::forward: times_.forward += t; break;
      case Pass::backward: times_.backward += t; break;
      case Pass::optimizer: times_.optimizer += t; break;
    }
    if (phase_) phase_->compute.push_back(describe());
    if (profiling_) {
      auto op = describe();
      auto& [seconds, calls] = profile_[op.kernel + " " + op.shape];
      seconds += t;
      ++calls;
    }
    for (Poller* p : pollers_) p->poll();
  }

  // Per (kernel, shape): total seconds and calls while profiling (a diagnostic: the
  // descriptions are built for every kernel then).
  void set_profiling(bool on) { profiling_ = on; }
  const std::map<std::string, std::pair<double, long>>& profile() const { return profile_; }

  // Time spent in communication (the caller has fenced what the message depends on).
  template <class Run, class Describe>
  void comm(CommKind kind, Run&& run, Describe&& describe) {
    const double t0 = MPI_Wtime();
    run();
    add_comm(kind, MPI_Wtime() - t0);
    if (kind == CommKind::dp_sync) {
      if (dp_sync_) dp_sync_->push_back(describe());
    } else if (phase_ && kind != CommKind::pp) {
      model::CommOp op = describe();
      op.after = phase_->compute.empty() ? "" : phase_->compute.back().name;
      phase_->comm.push_back(std::move(op));
    }
  }

  // Communication time that belongs to ops already described (waits, progress polls).
  void add_comm(CommKind kind, double seconds) {
    switch (kind) {
      case CommKind::tp: times_.tp_comm += seconds; break;
      case CommKind::ep: times_.ep_comm += seconds; break;
      case CommKind::pp: times_.pp_comm += seconds; break;
      case CommKind::dp:
      case CommKind::dp_sync:
      case CommKind::dp_params: times_.dp_comm += seconds; break;
    }
  }
  void add_idle(double seconds) { times_.pipeline_idle += seconds; }

 private:
  PhaseTimes times_;
  Pass pass_ = Pass::forward;
  model::Phase* phase_ = nullptr;
  std::vector<model::CommOp>* dp_sync_ = nullptr;
  std::vector<Poller*> pollers_;
  bool profiling_ = false;
  std::map<std::string, std::pair<double, long>> profile_;
};

}  // namespace sextant::train
