#pragma once
// The compute suite's measuring API: every registered kernel at its shapes and dtypes,
// validated against its reference, then timed run by run (each run fenced); and the
// working-set sweep of triad and dot bandwidth from L1-sized to beyond the last-level
// cache. No Google Benchmark and no Kokkos in this interface; the caller initialises
// Kokkos (sextant::Runtime or Kokkos::ScopeGuard) before calling and finalises after.
// Progress goes to the callback (the CLI sends it to stderr); results are returned.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/stats.hpp"

namespace sextant::compute {

// What the registry holds, for listings and --help (no Kokkos needed).
struct KernelDescription {
  std::string name, family, pass, counting;
  std::vector<std::string> params;  // shape parameter names
  std::vector<std::string> dtypes;  // "float64", "float32", ...
};
std::vector<KernelDescription> list_kernels();

// One exact case: a kernel at a "key=value,..." shape (keys the kernel does not take are
// ignored; missing ones are an error), optionally with its own flush size.
struct KernelCase {
  std::string kernel, shape;
  long long flush_bytes = -1;  // < 0: MeasureOptions::flush_bytes
  // Another case ("KERNEL SHAPE") run untimed right before each timed run, after the
  // flush: the op a training step runs before this one. What a kernel meets is not only
  // its operands' cache state: on a core that lowers its clock for wide vector work a
  // kernel that follows a vendor GEMM runs slower than back to back (1.2-1.5x for the
  // element-wise and attention kernels on a Sapphire Rapids guest, none on Zen 3).
  // Empty: none.
  std::string lead_in;
  // Its element type ("float64"), measured whether or not MeasureOptions::dtypes names
  // it (a mixed-precision step's master update); empty: those dtypes.
  std::string dtype;
};

struct MeasureOptions {
  bool quick = false;                 // quick shapes and short budgets: all kernels in < 30 s
  std::vector<std::string> kernels;   // names; empty: all (unknown name: UsageError)
  std::vector<std::string> families;  // families; empty: all
  std::vector<std::string> dtypes;    // empty: every dtype a kernel supports here
  bool full_shapes = false;           // the larger shape set (ignored when quick)
  // Exact cases instead of the registry's shape sets (for the kernels they name). Used
  // to calibrate operator models at the shapes, and in the cache state, of a training run.
  std::vector<KernelCase> cases;
  bool validate = true;               // one validated run per case before timing
  int warmup = 1;                     // untimed runs per case
  // Bytes streamed through (untimed) before every timed run, so that a kernel finds its
  // operands evicted by that much other traffic, as an operator of a training step
  // does by the ops between two of its calls; 0 = hot caches.
  long long flush_bytes = 0;
  std::optional<stats::StopRule> stop;  // per case; default: quick or standard rule below
  std::size_t min_runs = 3;             // timed runs per case, whatever the rule's budget says
  std::uint64_t seed = 20240611;
  std::function<void(const std::string&)> progress;  // one line per case; empty: silent
  // Called before each case (and each working set of the sweep): the suite passes a
  // barrier, so that the ranks of a node measure every case at the same time, sharing
  // the last-level cache and the memory as the ranks of a step do.
  std::function<void()> synchronize;
  // A collective: true while any rank wants more runs of the case. When set, the ranks
  // measure a flushed case in lockstep (all flush, agree, all run), so that no rank's
  // flush streams through a shared cache while another's kernel runs (a kernel then
  // finds its operands evicted by its own traffic, not its neighbour's: on a 2-vCPU
  // Zen 3 guest that doubled the time of a 2 ms GEMM). Hot cases run freely.
  std::function<bool(bool)> agree_more;

  static stats::StopRule quick_rule() { return {0.05, 0.12, 5, 200}; }
  static stats::StopRule standard_rule() { return {0.02, 1.0, 10, 1000}; }
};

struct KernelMeasurement {
  std::string name, family, pass, dtype;
  std::string shape;                                       // "M=1024,N=1024,K=1024,ta=0,tb=0"
  std::vector<std::pair<std::string, std::int64_t>> dims;  // the same, as numbers
  std::string counting;                                    // what flops and bytes count
  double flops = 0;  // per run, analytic
  double bytes = 0;  // per run, analytic
  long long flush_bytes = 0;    // streamed through before each timed run
  std::string lead_in;          // run right before each timed run ("KERNEL SHAPE"; "" none)
  std::vector<double> seconds;  // one per timed run, each fenced
  stats::Summary summary;       // of seconds
  stats::StopReason stop_reason = stats::StopReason::budget;
  bool validated = false;  // a validation run happened
  bool valid = true;       // and passed (true when not validated)
  std::size_t wrong = 0;   // elements unwritten or outside their error bound
  double error_ratio = 0;  // worst |error| / bound over compared elements (<= 1 passes)
  std::string validation_message;

  double intensity() const { return bytes > 0 ? flops / bytes : 0.0; }  // FLOP/byte
  double flop_rate() const { return summary.median > 0 ? flops / summary.median : 0.0; }  // FLOP/s
  double byte_rate() const { return summary.median > 0 ? bytes / summary.median : 0.0; }  // B/s
};

// Throws sextant::UsageError for an unknown kernel, family or dtype name. Wrong results
// do not throw: they are recorded (valid = false); see all_valid().
std::vector<KernelMeasurement> measure_kernels(const MeasureOptions& options = {});
bool all_valid(const std::vector<KernelMeasurement>& results);

// --- working-set sweep ------------------------------------------------------------

struct SweepOptions {
  bool quick = false;             // one point per octave, short budgets
  std::string dtype = "float64";
  long long min_bytes = 0;        // 0: a quarter of each thread's L1 data cache, times threads
  long long max_bytes = 0;        // 0: 4 x the last-level cache, capped at cap_bytes
  long long cap_bytes = 1LL << 30;  // ceiling of the default range (see WorkingSetSweep::note)
  int points_per_octave = 2;        // ignored when quick (1)
  double min_sample_seconds = 5e-4;  // a sample repeats the sweep in one launch at least this long
  std::optional<stats::StopRule> stop;
  std::size_t min_samples = 3;       // per point, whatever the rule's budget says
  std::function<void(const std::string&)> progress;
  std::function<void()> synchronize;  // before each working set (MeasureOptions::synchronize)
};

// The working-set sizes (bytes, all arrays of a kernel together) a sweep visits.
struct SweepPlan {
  long long l1_bytes = 0, l2_bytes = 0, llc_bytes = 0;  // per the OS (per core for L1, L2)
  int threads = 1;
  long long min_bytes = 0, max_bytes = 0;
  bool capped = false;  // 4 x LLC was above cap_bytes
  std::string note;     // why the range is what it is
  std::vector<long long> sizes;
};
SweepPlan plan_sweep(const SweepOptions& options = {});

struct BandwidthPoint {
  long long bytes = 0;         // working set: every array of the kernel
  std::int64_t elements = 0;   // per array
  int sweeps_per_sample = 1;   // repetitions inside one timed launch
  std::vector<double> seconds;  // per sweep (sample time / sweeps_per_sample)
  stats::Summary summary;
  double gbytes_per_s = 0;      // bytes / median seconds / 1e9
  double best_gbytes_per_s = 0; // bytes / min seconds / 1e9
};

struct BandwidthCurve {
  std::string kernel;  // "stream_triad" or "stream_dot"
  int arrays = 0;      // arrays moved per sweep (STREAM counting: 3 or 2)
  std::vector<BandwidthPoint> points;
};

struct WorkingSetSweep {
  std::string dtype;
  SweepPlan plan;
  std::vector<BandwidthCurve> curves;  // triad, dot
};

WorkingSetSweep sweep_bandwidth(const SweepOptions& options = {});

// --- cache retention (reuse distance) -------------------------------------------------
//
// What a rank finds of its data again after touching other data: a probe buffer is
// written, then d distinct bytes of another buffer are streamed through, then the probe
// is read and timed. kept(d) = (t_cold - t(d)) / (t_cold - t_hot): the share of the probe
// still cached at reuse distance d, as the step's cache model asks
// (models/cache_state.hpp). It differs from the working-set sweep's plateaus, which
// cycle one working set, and the ranks of a node (and a VM's neighbours) share the last
// level: every rank probes at once (synchronize).

struct RetentionOptions {
  bool quick = false;             // one point per octave (else two), fewer repetitions
  long long probe_bytes = 0;      // 0: twice the L2 per core (so that the probe measures the last level)
  long long max_distance = 0;     // 0: 4 x the last-level cache, capped at cap_bytes
  long long cap_bytes = 1LL << 30;
  std::function<void(const std::string&)> progress;
  std::function<void()> synchronize;
};

struct RetentionPoint {
  long long distance = 0;  // bytes streamed between the write and the timed read
  double seconds = 0;      // median time of the read
  double kept = 0;         // share of the probe still cached, in [0, 1], non-increasing in distance
};

struct CacheRetention {
  long long probe_bytes = 0;
  // What the rank's cores keep to themselves (their private caches, the L2 of each
  // thread's core): data reused within it is as near as in a hot run.
  long long near_bytes = 0;
  std::vector<RetentionPoint> points;  // ascending distance; the first at 0
  // The probe left alone instead (the rank spinning on the clock for `distance` ns,
  // touching nothing): on a host shared with other tenants their traffic evicts it too.
  // Each point's `kept` read against the curve above gives the distance that would have
  // evicted as much; the rate is the slope of that distance over the time left alone.
  std::vector<RetentionPoint> idle;
  double neighbour_bytes_per_second = 0;
};

CacheRetention measure_cache_retention(const RetentionOptions& options = {});

}  // namespace sextant::compute
