#include "suites/train/sync_skew.hpp"

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/stats.hpp"
#include "kernels/stream.hpp"
#include "suites/common/mpi.hpp"
#include "suites/common/results.hpp"
#include "suites/common/runtime.hpp"

namespace sextant::train {

void measure_sync_skew(const Runtime& rt, ResultsFile* results, bool quick) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const WaitMode wait = rt.oversubscribed() ? WaitMode::yield : WaitMode::blocking;
  // Three arrays of 16 KiB: they stay in any L1 or L2, so the block's time is the core's.
  const std::int64_t n = 2048;
  Kokkos::View<double*, Kokkos::LayoutRight, Exec::memory_space> a("sextant::sync_skew::a", n), b("sextant::sync_skew::b", n),
      c("sextant::sync_skew::c", n);
  Kokkos::deep_copy(b, 1.0);
  Kokkos::deep_copy(c, 2.0);
  Exec exec;
  auto block = [&](int reps) {
    const double t0 = MPI_Wtime();
    kernels::stream_triad_repeated(exec, a, b, c, 0.5, reps);
    exec.fence();
    return MPI_Wtime() - t0;
  };
  // Repetitions per second of work, from rank 0's calibration, the same on every rank.
  double per_rep = 0;
  if (rt.is_root()) {
    block(1000);
    std::vector<double> t;
    for (int k = 0; k < 5; ++k) t.push_back(block(2000) / 2000);
    per_rep = *std::min_element(t.begin(), t.end());
  }
  SEXTANT_MPI_CHECK(MPI_Bcast(&per_rep, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
  std::vector<double> intervals, excess;
  std::vector<double> all(rt.size());
  for (double target : {1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2}) {
    const int reps = std::max(1, int(target / std::max(per_rep, 1e-12)));
    const int blocks = std::clamp(int((quick ? 0.15 : 0.5) / target), 10, 400);
    // Per block: its mean time over the ranks and the slowest rank's excess over it. The
    // typical block is kept (the medians): a step's time is judged by its median too,
    // and a block that a rare disturbance stretched (a neighbour, a preemption) would
    // otherwise set the wait of every synchronisation of every step (with means, the
    // 0.1 ms interval's excess was 5% in one run and 18-19% in others on one machine).
    std::vector<double> means, excesses;
    for (int k = 0; k < blocks; ++k) {
      barrier(MPI_COMM_WORLD, wait);
      double mine = block(reps);
      SEXTANT_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD));
      double sum = 0, top = 0;
      for (double t : all) sum += t, top = std::max(top, t);
      const double mean = sum / rt.size();
      means.push_back(mean);
      excesses.push_back(mean > 0 ? (top - mean) / mean : 0);
    }
    intervals.push_back(stats::median(means));
    excess.push_back(stats::median(excesses));
  }
  if (!rt.is_root()) return;
  std::fprintf(stderr, "sextant: partners' wait at a synchronisation (the slowest of %d ranks over the mean):", rt.size());
  for (std::size_t i = 0; i < intervals.size(); ++i)
    std::fprintf(stderr, " %.2g ms +%.1f%%", intervals[i] * 1e3, excess[i] * 100);
  std::fprintf(stderr, "\n");
  if (results) {
    // Intervals as measured: ascending unless a disturbed block stretched one past the next.
    for (std::size_t i = 1; i < intervals.size(); ++i) intervals[i] = std::max(intervals[i], intervals[i - 1] * (1 + 1e-9));
    h5::Group g = results->group("sync");
    g.set_attr("ranks", std::int64_t{rt.size()});
    g.set_attr("work", "stream_triad over 3 x 16 KiB, repeated");
    g.write("interval_seconds", intervals);
    g.write("excess", excess);
    results->flush();
  }
}

}  // namespace sextant::train
