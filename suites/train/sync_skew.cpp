#include "suites/train/sync_skew.hpp"

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <vector>

#include "core/stats.hpp"
#include "kernels/stream.hpp"
#include "suites/common/mpi.hpp"
#include "suites/common/results.hpp"
#include "suites/common/runtime.hpp"

namespace sextant::train {

namespace {

// The work both measurements give the ranks: a triad over three arrays of 16 KiB, which
// stay in any L1 or L2, so its time is the core's; repeated `reps` times.
class Work {
 public:
  Work() : a_("sextant::sync_skew::a", n), b_("sextant::sync_skew::b", n), c_("sextant::sync_skew::c", n) {
    Kokkos::deep_copy(b_, 1.0);
    Kokkos::deep_copy(c_, 2.0);
  }
  double run(int reps) {  // seconds
    const double t0 = MPI_Wtime();
    kernels::stream_triad_repeated(exec_, a_, b_, c_, 0.5, reps);
    exec_.fence();
    return MPI_Wtime() - t0;
  }
  // Seconds per repetition, from rank 0's calibration, the same on every rank.
  double seconds_per_rep(const Runtime& rt) {
    double per_rep = 0;
    if (rt.is_root()) {
      run(1000);
      std::vector<double> t;
      for (int k = 0; k < 5; ++k) t.push_back(run(2000) / 2000);
      per_rep = *std::min_element(t.begin(), t.end());
    }
    SEXTANT_MPI_CHECK(MPI_Bcast(&per_rep, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    return std::max(per_rep, 1e-12);
  }

 private:
  using Exec = Kokkos::DefaultExecutionSpace;
  static constexpr std::int64_t n = 2048;
  Kokkos::View<double*, Kokkos::LayoutRight, Exec::memory_space> a_, b_, c_;
  Exec exec_;
};

}  // namespace

PartnersWait measure_partners_wait(const Runtime& rt, double budget, int min_blocks) {
  const WaitMode wait = rt.oversubscribed() ? WaitMode::yield : WaitMode::blocking;
  Work work;
  const double per_rep = work.seconds_per_rep(rt);
  PartnersWait out;
  for (double target : {1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2}) {
    const int reps = std::max(1, int(target / per_rep));
    const int blocks = std::clamp(int(budget / target), min_blocks, 400);
    std::vector<std::vector<double>> times(blocks);  // [block][rank]
    for (auto& t : times) {
      barrier(MPI_COMM_WORLD, wait);
      double mine = work.run(reps);
      t.resize(rt.size());
      SEXTANT_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_DOUBLE, t.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD));
    }
    // Each rank's time against its own typical one: a rank persistently slower than the
    // others (a co-tenant on its core: one vCPU of a 2-vCPU guest ran this triad at 1.5-2x
    // the other's for seconds, the plan's kernels at up to 1.4x) is in the kernels' times
    // (the slowest rank's, measured before a configuration's steps), not in this wait,
    // which would otherwise charge it twice, and at the triad's ratio, not the kernels'.
    std::vector<double> typical(rt.size());
    for (int r = 0; r < rt.size(); ++r) {
      std::vector<double> mine;
      for (const auto& t : times) mine.push_back(t[r]);
      typical[r] = std::max(stats::median(mine), 1e-12);
    }
    // Per block: its mean time over the ranks and the excess of the largest relative time
    // over the ranks' mean of them. The typical block is kept (the medians): a step's
    // time is judged by its median too, and a block that a rare disturbance stretched (a
    // neighbour, a preemption) would otherwise set the wait of every synchronisation of
    // every step (with means, the 0.1 ms interval's excess was 5% in one run and 18-19% in
    // others on one machine).
    std::vector<double> means, excesses;
    for (const auto& t : times) {
      double sum = 0, top = 0, relative_sum = 0;
      for (int r = 0; r < rt.size(); ++r) {
        sum += t[r];
        relative_sum += t[r] / typical[r];
        top = std::max(top, t[r] / typical[r]);
      }
      means.push_back(sum / rt.size());
      const double relative_mean = relative_sum / rt.size();
      excesses.push_back(relative_mean > 0 ? (top - relative_mean) / relative_mean : 0);
    }
    // Intervals as measured: ascending unless a disturbed block stretched one past the next.
    const double interval = stats::median(means);
    out.interval_s.push_back(out.interval_s.empty() ? interval : std::max(interval, out.interval_s.back() * (1 + 1e-9)));
    out.excess.push_back(stats::median(excesses));
  }
  return out;
}

void measure_sync_skew(const Runtime& rt, ResultsFile* results, bool quick) {
  const PartnersWait w = measure_partners_wait(rt, quick ? 0.15 : 0.5, 10);
  if (!rt.is_root()) return;
  std::fprintf(stderr, "sextant: partners' wait at a synchronisation (%d ranks, each against its typical time):", rt.size());
  for (std::size_t i = 0; i < w.interval_s.size(); ++i)
    std::fprintf(stderr, " %.2g ms +%.1f%%", w.interval_s[i] * 1e3, w.excess[i] * 100);
  std::fprintf(stderr, "\n");
  if (results) {
    h5::Group g = results->group("sync");
    g.set_attr("ranks", std::int64_t{rt.size()});
    g.set_attr("work", "stream_triad over 3 x 16 KiB, repeated");
    g.set_attr("statistic", "median over blocks of (max - mean) / mean of the ranks' times over their own medians");
    g.write("interval_seconds", w.interval_s);
    g.write("excess", w.excess);
    results->flush();
  }
}

void measure_message_overhead(const Runtime& rt, ResultsFile* results, std::vector<std::uint64_t> sizes, bool quick) {
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::erase(sizes, std::uint64_t{0});
  if (sizes.empty() || rt.size() < 2 || rt.oversubscribed()) return;
  // Each rank pairs with the one half the job away: pipeline stages are the outermost
  // of the ranks' order (Megatron's), so a stage's neighbour is as far, across nodes
  // where there are several. An odd count's last rank computes alone.
  const int half = rt.size() / 2, me = rt.rank();
  const int partner = me < half ? me + half : me < 2 * half ? me - half : -1;
  Work work;
  const int reps = std::max(1, int(50e-6 / work.seconds_per_rep(rt)));  // a kernel of ~50 us
  // A block of ~20 ms of kernels with one message posted each way every 1.25 ms of
  // them: a pipeline stage's rhythm (a message in and one out per micro-batch's
  // compute), spaced so that each message is handled alone.
  const int kernels = 400, messages = 16, rounds = quick ? 7 : 15;
  std::vector<char> out(sizes.back(), 1), in(sizes.back());
  const auto block = [&](std::uint64_t bytes, bool busy) {
    busy = busy && partner >= 0;
    MPI_Request receive = MPI_REQUEST_NULL;
    std::vector<MPI_Request> sends;
    int received = 0;
    const auto post_receive = [&] {
      SEXTANT_MPI_CHECK(MPI_Irecv(in.data(), int(bytes), MPI_BYTE, partner, 0, MPI_COMM_WORLD, &receive));
    };
    if (busy) post_receive();
    double compute = 0;
    for (int k = 0; k < kernels; ++k) {
      if (busy && k % (kernels / messages) == 0 && int(sends.size()) < messages) {
        sends.emplace_back();
        SEXTANT_MPI_CHECK(MPI_Isend(out.data(), int(bytes), MPI_BYTE, partner, 0, MPI_COMM_WORLD, &sends.back()));
      }
      compute += work.run(reps);
      if (!busy) continue;
      int done = 0;
      SEXTANT_MPI_CHECK(MPI_Test(&receive, &done, MPI_STATUS_IGNORE));
      if (done && ++received < messages) post_receive();
      SEXTANT_MPI_CHECK(MPI_Testall(int(sends.size()), sends.data(), &done, MPI_STATUSES_IGNORE));
    }
    for (; busy && received < messages; ++received) {  // what is left arrives outside the kernels' time
      SEXTANT_MPI_CHECK(MPI_Wait(&receive, MPI_STATUS_IGNORE));
      if (received + 1 < messages) post_receive();
    }
    SEXTANT_MPI_CHECK(MPI_Waitall(int(sends.size()), sends.data(), MPI_STATUSES_IGNORE));
    return compute;
  };
  std::vector<double> bytes_measured, overhead;
  for (const auto bytes : sizes) {
    if (bytes > std::uint64_t(std::numeric_limits<int>::max())) break;
    std::vector<double> per_message;
    for (int round = 0; round < rounds; ++round) {
      double t[2];  // quiet, busy; in alternating order, so that a drift meets both
      for (const bool busy : round % 2 ? std::array{true, false} : std::array{false, true}) {
        barrier(MPI_COMM_WORLD, WaitMode::blocking);
        t[busy] = block(bytes, busy);
      }
      double mine[2] = {partner >= 0 ? t[1] - t[0] : 0.0, partner >= 0 ? 1.0 : 0.0}, sum[2];
      SEXTANT_MPI_CHECK(MPI_Allreduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
      per_message.push_back(sum[0] / sum[1] / (2 * messages));  // each paired rank sent and received `messages`
    }
    bytes_measured.push_back(double(bytes));
    overhead.push_back(stats::median(per_message));
  }
  if (!rt.is_root() || bytes_measured.empty()) return;
  std::fprintf(stderr, "sextant: a message's host overhead on the compute it overlaps (%d ranks in pairs):", rt.size());
  for (std::size_t i = 0; i < overhead.size(); ++i) std::fprintf(stderr, " %.0f B %.1f us", bytes_measured[i], overhead[i] * 1e6);
  std::fprintf(stderr, "\n");
  if (results) {
    h5::Group g = results->group("sync");
    g.set_attr("message_work", "kernels of the triad block, ~50 us each, 400 a block; 16 messages each way a block");
    g.write("message_bytes", bytes_measured);
    g.write("message_overhead_seconds", overhead);
    results->flush();
  }
}

}  // namespace sextant::train
