#include "suites/compute/suite.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/units.hpp"
#include "kernels/registry.hpp"
#include "models/roofline.hpp"
#include "suites/common/json_results.hpp"
#include "suites/common/mpi.hpp"
#include "suites/common/results.hpp"
#include "suites/common/runtime.hpp"

namespace sextant::compute {
namespace {

// /compute/kernels/<kernel>/<dtype>: one entry per shape.
void write_kernels(ResultsFile& file, const std::vector<KernelMeasurement>& all) {
  std::map<std::pair<std::string, std::string>, std::vector<const KernelMeasurement*>> groups;
  for (const auto& m : all) groups[{m.name, m.dtype}].push_back(&m);
  for (const auto& [key, ms] : groups) {
    h5::Group g = file.group("compute/kernels/" + key.first + "/" + key.second);
    g.set_attr("family", ms.front()->family);
    g.set_attr("pass", ms.front()->pass);
    g.set_attr("counting", ms.front()->counting);
    std::vector<std::string> shape, stop, message, lead_in;
    std::vector<double> flops, bytes, median, lo, hi, mn, mean, mx, p5, p95, p99, cv, err, flushed;
    std::vector<std::int64_t> reps, wrong, valid;
    h5::Group samples = g.create_group("samples");
    for (std::size_t i = 0; i < ms.size(); ++i) {
      const auto& m = *ms[i];
      shape.push_back(m.shape);
      flops.push_back(m.flops);
      bytes.push_back(m.bytes);
      median.push_back(m.summary.median);
      lo.push_back(m.summary.ci_lo);
      hi.push_back(m.summary.ci_hi);
      mn.push_back(m.summary.min);
      mean.push_back(m.summary.mean);
      mx.push_back(m.summary.max);
      p5.push_back(m.summary.p5);
      p95.push_back(m.summary.p95);
      p99.push_back(m.summary.p99);
      cv.push_back(m.summary.cv);
      reps.push_back(static_cast<std::int64_t>(m.seconds.size()));
      stop.emplace_back(stats::to_string(m.stop_reason));
      wrong.push_back(static_cast<std::int64_t>(m.wrong));
      valid.push_back(m.valid ? 1 : 0);
      err.push_back(m.error_ratio);
      flushed.push_back(double(m.flush_bytes));
      lead_in.push_back(m.lead_in);
      message.push_back(m.validation_message);
      char name[32];
      std::snprintf(name, sizeof name, "%03zu", i);
      samples.write(name, m.seconds);
    }
    g.write("shape", shape);
    g.write("flops", flops);
    g.write("bytes", bytes);
    g.write("median", median);
    g.write("flush_bytes", flushed);
    if (std::any_of(lead_in.begin(), lead_in.end(), [](const std::string& l) { return !l.empty(); }))
      g.write("lead_in", lead_in);
    g.write("ci_lo", lo);
    g.write("ci_hi", hi);
    g.write("min", mn);
    g.write("mean", mean);
    g.write("max", mx);
    g.write("p5", p5);
    g.write("p95", p95);
    g.write("p99", p99);
    g.write("cv", cv);
    g.write("reps", reps);
    g.write("stop_reason", stop);
    g.write("valid", valid);
    g.write("wrong", wrong);
    g.write("error_ratio", err);
    g.write("validation_message", message);
  }
}

// /compute/sweep/<kernel>/<dtype>: the whole bandwidth curve.
void write_sweep(ResultsFile& file, const WorkingSetSweep& sweep) {
  for (const auto& curve : sweep.curves) {
    std::string kernel = curve.kernel.rfind("stream_", 0) == 0 ? curve.kernel.substr(7) : curve.kernel;
    h5::Group g = file.group("compute/sweep/" + kernel + "/" + sweep.dtype);
    g.set_attr("arrays", std::int64_t{curve.arrays});
    g.set_attr("note", sweep.plan.note);
    std::vector<double> ws, bw, best, median, cv;
    std::vector<std::int64_t> elements, reps;
    for (const auto& p : curve.points) {
      ws.push_back(static_cast<double>(p.bytes));
      bw.push_back(p.gbytes_per_s * 1e9);
      best.push_back(p.best_gbytes_per_s * 1e9);
      median.push_back(p.summary.median);
      cv.push_back(p.summary.cv);
      elements.push_back(p.elements);
      reps.push_back(static_cast<std::int64_t>(p.seconds.size()));
    }
    g.write("working_set", ws);
    g.write("bandwidth", bw);
    g.write("best_bandwidth", best);
    g.write("median", median);
    g.write("cv", cv);
    g.write("elements", elements);
    g.write("reps", reps);
  }
}

// /compute/retention: the cache retention probe (measure.hpp).
void write_retention(ResultsFile& file, const CacheRetention& r) {
  h5::Group g = file.group("compute/retention");
  g.set_attr("probe_bytes", std::int64_t{r.probe_bytes});
  if (r.near_bytes > 0) g.set_attr("near_bytes", std::int64_t{r.near_bytes});
  std::vector<double> distance, seconds, kept;
  for (const auto& p : r.points) {
    distance.push_back(double(p.distance));
    seconds.push_back(p.seconds);
    kept.push_back(p.kept);
  }
  g.write("distance_bytes", distance);
  g.write("median", seconds);
  g.write("kept", kept);
  if (!r.idle.empty()) {
    std::vector<double> idle, idle_median, idle_kept;
    for (const auto& p : r.idle) {
      idle.push_back(double(p.distance) * 1e-9);
      idle_median.push_back(p.seconds);
      idle_kept.push_back(p.kept);
    }
    g.write("idle_seconds", idle);
    g.write("idle_median", idle_median);
    g.write("idle_kept", idle_kept);
    g.set_attr("neighbour_bytes_per_second", r.neighbour_bytes_per_second);
  }
}

}  // namespace

bool is_kernel(const std::string& name) {
  static const auto all = list_kernels();
  return std::any_of(all.begin(), all.end(), [&](const KernelDescription& k) { return k.name == name; });
}

namespace {

// The measurements as the JSON results document holds them (docs/file-formats.md):
// the statistics of the results file's /compute, without the samples.
nlohmann::json to_json(const std::vector<KernelMeasurement>& kernels, const WorkingSetSweep& sweep,
                       const CacheRetention& retention) {
  nlohmann::json k = nlohmann::json::array(), curves = nlohmann::json::array();
  for (const auto& m : kernels)
    k.push_back({{"kernel", m.name}, {"family", m.family}, {"pass", m.pass}, {"dtype", m.dtype}, {"shape", m.shape},
                 {"flops", m.flops}, {"bytes", m.bytes}, {"flush_bytes", m.flush_bytes}, {"lead_in", m.lead_in},
                 {"median_s", m.summary.median}, {"ci_lo_s", m.summary.ci_lo}, {"ci_hi_s", m.summary.ci_hi},
                 {"min_s", m.summary.min}, {"mean_s", m.summary.mean}, {"max_s", m.summary.max},
                 {"p5_s", m.summary.p5}, {"p95_s", m.summary.p95}, {"p99_s", m.summary.p99},
                 {"cv", m.summary.cv}, {"reps", m.seconds.size()},
                 {"stop", stats::to_string(m.stop_reason)}, {"valid", m.valid}, {"flop_rate", m.flop_rate()},
                 {"byte_rate", m.byte_rate()}});
  for (const auto& c : sweep.curves) {
    nlohmann::json points = nlohmann::json::array();
    for (const auto& p : c.points)
      points.push_back({{"working_set_bytes", p.bytes}, {"bandwidth_Bps", p.gbytes_per_s * 1e9},
                        {"best_bandwidth_Bps", p.best_gbytes_per_s * 1e9}, {"median_s", p.summary.median}});
    curves.push_back({{"kernel", c.kernel}, {"dtype", sweep.dtype}, {"points", std::move(points)}});
  }
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& p : retention.points)
    kept.push_back({{"distance_bytes", p.distance}, {"median_s", p.seconds}, {"kept", p.kept}});
  return {{"kernels", std::move(k)},
          {"working_set_sweep", std::move(curves)},
          {"cache_retention",
           {{"probe_bytes", retention.probe_bytes}, {"near_bytes", retention.near_bytes},
            {"neighbour_bytes_per_second", retention.neighbour_bytes_per_second}, {"points", std::move(kept)}}}};
}

// Does a kernel run faster than the peak kernel of its dtype? Then the peak was measured
// while the machine was slower (a co-tenant on the core for a few seconds does that) or
// the peak kernel misses the hardware's peak; only measuring it again tells which.
bool beats_peak(const std::vector<KernelMeasurement>& all) {
  std::map<std::string, double> peak;
  for (const auto& m : all)
    if (m.family == "peak") peak[m.dtype] = std::max(peak[m.dtype], m.flop_rate());
  return std::any_of(all.begin(), all.end(), [&](const KernelMeasurement& m) {
    return m.family != "peak" && peak.count(m.dtype) && m.flop_rate() > peak[m.dtype];
  });
}

// The peak kernel's shapes measured again, each kept where the new median is the lower:
// a ceiling is the best rate the machine gives, so the faster of two windows (seconds
// apart) is the truer one. Every rank measures; all decide alike (MAX over ranks).
void remeasure_peak_while_beaten(const MeasureOptions& options, std::vector<KernelMeasurement>& all, WaitMode wait) {
  for (int attempt = 1; attempt <= 2; ++attempt) {
    int mine = beats_peak(all) ? 1 : 0, any = 0;
    allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, wait);
    if (!any) return;
    MeasureOptions again = options;
    again.kernels = {"peak_fma"};
    again.families.clear();
    again.cases.clear();
    again.validate = false;  // validated the first time
    for (const auto& m : all)
      if (m.name == "peak_fma") again.cases.push_back({m.name, m.shape, m.flush_bytes, "", m.dtype});
    if (again.cases.empty()) return;
    if (options.progress)
      options.progress("a kernel ran faster than peak_fma: the peak measured again (" + std::to_string(attempt) +
                       " of 2)");
    barrier(MPI_COMM_WORLD, wait);
    for (auto& r : measure_kernels(again))
      for (auto& m : all)
        if (m.name == r.name && m.dtype == r.dtype && m.shape == r.shape && r.summary.median < m.summary.median) {
          r.validated = m.validated, r.valid = m.valid, r.wrong = m.wrong, r.error_ratio = m.error_ratio;
          r.validation_message = m.validation_message;
          m = std::move(r);
          break;
        }
  }
}

// The fastest memory level the fit will find in this sweep (models/roofline: the same
// plateau detection), in bytes/s; 0 when the sweep has no triad curve.
double fastest_memory_level(const WorkingSetSweep& sweep, const std::vector<double>& caches) {
  for (const auto& c : sweep.curves) {
    if (c.kernel.find("triad") == std::string::npos) continue;
    std::vector<model::CurvePoint> curve;
    for (const auto& p : c.points) curve.push_back({double(p.bytes), p.gbytes_per_s * 1e9});
    double top = 0;
    if (curve.size() >= 2)
      for (const auto& l : model::detect_memory_levels(curve, caches)) top = std::max(top, l.bandwidth);
    return top;
  }
  return 0;
}

// Does a kernel move bytes faster than the fastest memory level of the sweep? Then the
// sweep ran while the machine was slower (a co-tenant for a few seconds), as with the
// peak above; the sweep is measured again, at most twice, each working set keeping its
// faster window. Every rank measures; all decide alike.
void remeasure_sweep_while_beaten(const SweepOptions& options, const std::vector<KernelMeasurement>& kernels,
                                  WorkingSetSweep& sweep, const std::vector<double>& caches, WaitMode wait) {
  for (int attempt = 1; attempt <= 2; ++attempt) {
    const double top = fastest_memory_level(sweep, caches);
    int mine = top > 0 && std::any_of(kernels.begin(), kernels.end(), [&](const KernelMeasurement& m) {
                 return m.family != "peak" && m.byte_rate() > top;
               }) ? 1 : 0;
    int any = 0;
    allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, wait);
    if (!any) return;
    if (options.progress)
      options.progress("a kernel moved bytes faster than the working-set sweep's fastest level: the sweep measured "
                       "again (" + std::to_string(attempt) + " of 2)");
    barrier(MPI_COMM_WORLD, wait);
    const auto again = sweep_bandwidth(options);
    for (std::size_t c = 0; c < sweep.curves.size() && c < again.curves.size(); ++c)
      for (auto& p : sweep.curves[c].points)
        for (const auto& q : again.curves[c].points)
          if (q.bytes == p.bytes && q.gbytes_per_s > p.gbytes_per_s) p = q;
  }
}

}  // namespace

long long run_compute_suite(Runtime& rt, const SuiteOptions& options, ResultsFile* results, JsonResults* json) {
  if (rt.is_root() && rt.oversubscribed())
    std::fprintf(stderr, "sextant: WARNING: oversubscribed: compute timings are not meaningful\n");
  int threads = Kokkos::DefaultExecutionSpace().concurrency();
  SuiteOptions o = options;
  if (rt.is_root()) {
    o.kernels.progress = [](const std::string& line) { std::fprintf(stderr, "[compute] %s\n", line.c_str()); };
    o.sweep.progress = o.kernels.progress;
  } else {
    o.kernels.progress = nullptr;
    o.sweep.progress = nullptr;
  }
  // Every rank measures every case and working set at once (the ranks of a node share
  // its last-level cache and memory, as in a step); waits yield when oversubscribed.
  WaitMode wait = rt.oversubscribed() ? WaitMode::yield : WaitMode::blocking;
  o.kernels.synchronize = o.sweep.synchronize = o.retention.synchronize = [wait] { barrier(MPI_COMM_WORLD, wait); };
  o.kernels.agree_more = [wait](bool more) { return any_rank(more, MPI_COMM_WORLD, wait); };
  o.retention.progress = o.sweep.progress;
  o.retention.quick = o.sweep.quick;
  barrier(MPI_COMM_WORLD, wait);
  auto kernels = measure_kernels(o.kernels);
  remeasure_peak_while_beaten(o.kernels, kernels, wait);
  std::vector<double> caches;  // the data caches, as the fit reads them (cache_bytes)
  for (const auto& c : rt.machine().caches)
    if (c.type != "Instruction") caches.push_back(static_cast<double>(c.bytes));
  // Written as each stage finishes: a run interrupted in the sweep keeps its kernels.
  if (results) {
    h5::Group g = results->group("compute");
    g.set_attr("threads", std::int64_t{threads});
    g.set_attr("oversubscribed", std::int64_t{rt.oversubscribed()});
    // The ISA the kernels were compiled for: what sized their register tiles and the
    // peak sweep's accumulator counts (kernels/isa.hpp).
    const auto isa = kernels::compiled_isa();
    g.set_attr("isa", std::string(isa.name));
    g.set_attr("vector_bytes", std::int64_t{isa.vector_bytes});
    g.set_attr("vector_registers", std::int64_t{isa.vector_registers});
    g.set_attr("cache_bytes", caches);
    g.set_attr("cache_source", rt.machine().cache_source);
    // The portable GEMM's cache blocks, derived from those caches (kernels/gemm_blocks.hpp).
    for (kernels::Dtype t : {kernels::Dtype::float64, kernels::Dtype::float32}) {
      const auto b = kernels::gemm_blocks(t);
      g.set_attr("gemm_blocks_" + std::string(kernels::to_string(t)),
                 std::vector<double>{double(b.mb), double(b.nb), double(b.kb)});
      g.set_attr("gemm_blocks_source", b.source);
    }
    write_kernels(*results, kernels);
    results->flush();
  }
  barrier(MPI_COMM_WORLD, wait);
  auto sweep = sweep_bandwidth(o.sweep);
  remeasure_sweep_while_beaten(o.sweep, kernels, sweep, caches, wait);
  if (results) {
    write_sweep(*results, sweep);
    results->flush();
  }
  barrier(MPI_COMM_WORLD, wait);
  const auto retention = measure_cache_retention(o.retention);
  if (results) {
    write_retention(*results, retention);
    results->flush();
  }
  barrier(MPI_COMM_WORLD, wait);

  long long invalid = 0;
  for (const auto& m : kernels)
    if (!m.valid) {
      ++invalid;
      std::fprintf(stderr, "sextant: WRONG rank %d kernel %s %s %s: %s\n", rt.rank(), m.name.c_str(), m.dtype.c_str(),
                   m.shape.c_str(), m.validation_message.c_str());
    }
  if (rt.is_root()) {
    // The comm tables' statistics: the median (rates are from it), the fastest and p99.
    std::printf("%-22s %-8s %-36s %11s %11s %11s %10s %10s %8s %6s\n", "kernel", "dtype", "shape", "median(us)",
                "min(us)", "p99(us)", "GFLOP/s", "GB/s", "AI", "valid");
    for (const auto& m : kernels)
      std::printf("%-22s %-8s %-36s %11.2f %11.2f %11.2f %10.2f %10.2f %8.2f %6s\n", m.name.c_str(), m.dtype.c_str(),
                  m.shape.c_str(), m.summary.median * 1e6, m.summary.min * 1e6, m.summary.p99 * 1e6,
                  m.flop_rate() / 1e9, m.byte_rate() / 1e9, m.intensity(), m.valid ? "yes" : "NO");
    for (const auto& c : sweep.curves) {
      std::printf("\n# working-set sweep %s %s (%s)\n%14s %10s\n", c.kernel.c_str(), sweep.dtype.c_str(),
                  sweep.plan.note.c_str(), "working set", "GB/s");
      for (const auto& p : c.points)
        std::printf("%14s %10.2f\n", format_bytes(static_cast<double>(p.bytes)).c_str(), p.gbytes_per_s);
    }
    std::printf("\n# cache retention (a %s probe read after other data streamed through)\n%14s %10s %7s\n",
                format_bytes(double(retention.probe_bytes)).c_str(), "between", "read(us)", "kept");
    for (const auto& p : retention.points)
      std::printf("%14s %10.2f %6.0f%%\n", format_bytes(double(p.distance)).c_str(), p.seconds * 1e6, p.kept * 100);
    std::fflush(stdout);
    if (json) {
      auto doc = to_json(kernels, sweep, retention);
      const auto isa = kernels::compiled_isa();
      doc["threads"] = threads;
      doc["isa"] = isa.name;
      json->set("compute", std::move(doc));
    }
  }
  long long total = 0;
  allreduce(&invalid, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, wait);
  return total;
}

}  // namespace sextant::compute
