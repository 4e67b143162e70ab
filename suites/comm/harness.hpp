#pragma once
// The comm suite's one harness: sizes, datatypes and levels are looped here once
// for every benchmark descriptor; timing, synchronisation, adaptive repetition,
// validation, statistics and output live here and nowhere else.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/stats.hpp"
#include "core/units.hpp"
#include "suites/comm/benchmark.hpp"

namespace sextant {
class Runtime;
class ResultsFile;
class JsonResults;
}  // namespace sextant

namespace sextant::comm {

enum class SyncMode { barrier, window };
enum class Level { world, intra, inter };
std::string_view to_string(SyncMode m);
std::string_view to_string(Level l);
SyncMode parse_sync(std::string_view s);
Level parse_level(std::string_view s);

struct Options {
  ByteRange sizes{1, 1 << 22};
  double factor = 2;
  std::size_t max_iterations = 1000;
  std::size_t min_iterations = 10;
  std::size_t warmup = 10;
  // Seconds of the operation at a sweep's first size before that size is measured (the
  // per-size warm-up iterations are too few to settle a path: over the namespace network
  // the first sizes of a launch ran 5-15% slower than later ones, enough to split a false
  // segment off the smallest sizes of a fit). Negative: one size's budget, at most 0.2 s.
  double sweep_warmup_seconds = -1;
  // Passes over the sizes: each pass measures every size with 1/passes of its budget and
  // iterations (Sweep::pass_budget), and a size's statistics pool its iterations of
  // every pass. A machine's slow phase (seconds to minutes on a shared host or a
  // software network) then meets every size alike instead of a run of neighbouring
  // sizes: over the namespace network a few consecutive small sizes ran 15-25 us slow
  // within one launch and the fit split them off as a segment of their own.
  int passes = 1;
  SyncMode sync = SyncMode::barrier;
  // Idle seconds before each timed iteration (after its barrier; in window mode, added to
  // the window). 0, OSU's way: iterations back to back, each meeting the transport as the
  // previous one left it. An application's collective usually follows compute and meets
  // it idle, which on TCP across hosts can differ (a 256 KiB allreduce at 200 us one-way:
  // 6.5 ms back to back, 4.7 ms after 0.2 ms or more of idle, in one launch).
  // gap_as_long_as_the_operation: idle as long as the operation takes (its last warm-up
  // run, the slowest rank's), whatever the transport's own settling time.
  double gap = 0;
  double budget_seconds = 0.25;     // per size
  double rel_ci_half_width = 0.02;
  std::vector<std::string> benchmarks;  // empty = all
  std::vector<Dtype> dtypes{Dtype::float32};
  Reduction reduction = Reduction::sum;
  std::vector<Level> levels{Level::world};
  std::vector<int> rank_counts;  // the rank sweep (each on the level's first p ranks); empty = all
  // Sizes measured besides the sweep's, per benchmark (in its size unit): the train suite
  // adds those its plans send, so that a step's collectives are predicted from their own
  // sizes rather than between sweep points a factor apart.
  std::map<std::string, std::vector<std::uint64_t>, std::less<>> extra_sizes;
  bool extra_sizes_only = false;  // measure those alone (a benchmark without any: none)
  // The library's own collective algorithms to measure besides its choice, each forced
  // through its MPI_T control (library_algorithms.hpp): empty, none; {"all"}, every one
  // it has; else these names.
  std::vector<std::string> algorithms;
  int check_iterations = 1;
  bool off_cache = false;
  bool time_in_place = false;
  // Collectives timed in their non-blocking form, started and waited for (MPI_I<coll> +
  // MPI_Wait), as a program that can overlap them calls them; the library may run other
  // algorithms for it (MPICH across the namespace network: an in-place 1.5 MB allgather
  // and reduce_scatter took 29 ms blocking, 20 ms non-blocking).
  bool time_nonblocking = false;
  MemoryKind memory = MemoryKind::host;
  int window = 64;
  std::optional<WaitMode> wait;  // default: yield when oversubscribed
  int corrupt_rank = -1;         // test hook: this rank corrupts its received data
  bool total_bytes_column = false;  // print sizes as the bytes algbw counts (nccl-tests' "size")
  // Test hook for window synchronisation: this rank starts late, by late_seconds before
  // every start (the window must widen past it), or always when late_seconds is 0.
  int late_rank = -1;
  double late_seconds = 0;
  // Test hook: this rank stalls for stall_seconds before the first start of each size's
  // first two batches, as a transport stall (a TCP retransmission's wait) spoils a batch.
  int stall_rank = -1;
  double stall_seconds = 0;
};

inline constexpr double gap_as_long_as_the_operation = -1;

// Applies --quick: a short sweep for smoke runs and CI.
void make_quick(Options& o);

struct SizeResult {
  std::uint64_t bytes = 0;      // size as swept (per the benchmark's unit)
  std::uint64_t count = 0;      // elements per rank
  double data_bytes = 0;        // bytes counted for algbw
  stats::Summary time;          // of the collective time (max over ranks), seconds
  std::size_t valid = 0, total = 0, late = 0;
  stats::StopReason stop = stats::StopReason::iteration_cap;
  std::vector<double> rank_times;  // total x ranks, row-major; NaN = invalid (late start)
  long long wrong = 0, wrong_in_place = 0;
  double algbw = 0, busbw = 0;     // bytes/s from the median
  double clock_residual = 0;       // window mode
  double sync_window = 0;          // window mode: the last window used, seconds (NaN in barrier mode)
  double gap = 0;                  // idle seconds before each timed iteration (Options::gap)
  std::string unmeasured;          // why no time could be measured ("" = measured); time is then NaN
  // Non-blocking benchmarks (OMB-NBC definitions), NaN otherwise.
  double overlapped = 0, compute = 0, overlap_percent = 0;
};

struct BenchmarkResult {
  const Benchmark* benchmark = nullptr;
  Level level = Level::world;
  Dtype dtype = Dtype::byte;
  int ranks = 0;
  std::vector<SizeResult> sizes;
  std::string algorithm;  // the library's algorithm forced for this run; empty: its own choice
  bool isolated = false;  // timed after an idle gap (Options::gap)
  // The benchmark as results, tables and JSON name it: "allreduce", with a forced
  // algorithm "allreduce@ring", timed after a gap "allreduce~isolated" (each a benchmark
  // of its own to the fit; models/collectives.hpp).
  std::string name() const;
};

// What a run found beyond its numbers, on all ranks; the caller turns it into the exit status.
struct Outcome {
  long long wrong = 0;       // wrong values received
  long long unmeasured = 0;  // sizes stored as missing (no valid repetition)
  // Rank 0's: each measured size's median time (as results name it), for callers that
  // compare runs.
  struct Timed {
    std::string benchmark, level, dtype;
    int ranks = 0;
    double bytes = 0, seconds = 0;
  };
  std::vector<Timed> timed;
};

// Runs every selected benchmark; each is written to `results` and `json` (either may be
// null; rank 0's are used) as it finishes.
Outcome run_comm_suite(Runtime& rt, const Options& options, ResultsFile* results, JsonResults* json = nullptr);

// Writes one benchmark's results under comm/<level>/<benchmark>/<dtype>/p<ranks>.
void write_results(ResultsFile& file, const BenchmarkResult& r, const Options& o, bool oversubscribed);

}  // namespace sextant::comm
