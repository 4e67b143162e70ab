#include "suites/compute/measure.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/machine.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "kernels/registry.hpp"
#include "kernels/stream.hpp"

namespace sextant::compute {
namespace {

namespace k = sextant::kernels;

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

template <class T>
bool selected(const std::vector<std::string>& wanted, const T& value) {
  return wanted.empty() || std::find(wanted.begin(), wanted.end(), value) != wanted.end();
}

std::string format_rate(double v, const char* unit) {
  char buf[64];
  const char* prefix[] = {"", "k", "M", "G", "T", "P"};
  int p = 0;
  while (std::abs(v) >= 1000 && p < 5) v /= 1000, ++p;
  std::snprintf(buf, sizeof buf, "%.3g %s%s", v, prefix[p], unit);
  return buf;
}

void check_names(const MeasureOptions& o) {
  std::set<std::string> names, families;
  for (const auto& kernel : k::registry()) names.insert(kernel.name), families.insert(kernel.family);
  for (const auto& n : o.kernels)
    if (!names.count(n)) throw UsageError("unknown kernel '" + n + "' (see the kernel list)");
  for (const auto& f : o.families)
    if (!families.count(f)) throw UsageError("unknown kernel family '" + f + "'");
  for (const auto& d : o.dtypes)
    if (!k::parse_dtype(d)) throw UsageError("unknown dtype '" + d + "' (float64, float32, float16, bfloat16)");
  for (const auto& c : o.cases)
    if (!c.dtype.empty() && !k::parse_dtype(c.dtype))
      throw UsageError("case " + c.kernel + " '" + c.shape + "': unknown dtype '" + c.dtype + "'");
}

}  // namespace

std::vector<KernelDescription> list_kernels() {
  std::vector<KernelDescription> out;
  for (const auto& kernel : k::registry()) {
    KernelDescription d{kernel.name, kernel.family, kernel.pass, kernel.counting, kernel.params, {}};
    for (auto t : kernel.dtypes) d.dtypes.emplace_back(k::to_string(t));
    out.push_back(std::move(d));
  }
  return out;
}

// A kernel's parameters from a "key=value,..." shape (keys it does not take are ignored).
k::Shape parse_shape(const k::KernelInfo& kernel, const std::string& text, const std::string& what) {
  std::map<std::string, std::int64_t> given;
  for (const auto& item : split_list(text)) {
    auto eq = item.find('=');
    if (eq != std::string::npos) given[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
  }
  k::Shape shape;
  for (const auto& p : kernel.params) {
    auto it = given.find(p);
    if (it == given.end()) throw UsageError(what + " " + kernel.name + " '" + text + "': no value for parameter " + p);
    shape.dims.emplace_back(p, it->second);
  }
  return shape;
}

// A shape to measure, in one cache state, after one lead-in, in one dtype ("": the
// options' dtypes).
struct ShapeCase {
  k::Shape shape;
  long long flush_bytes = 0;
  std::string lead_in;
  std::string dtype;
};

// The shapes of the cases that name this kernel, in its parameter order, each with its
// flush size and lead-in (a shape may be measured in several cache states: once per
// flush size).
std::vector<ShapeCase> shapes_of_cases(const k::KernelInfo& kernel, const std::vector<KernelCase>& cases,
                                       long long default_flush) {
  std::vector<ShapeCase> out;
  for (const auto& c : cases) {
    if (c.kernel != kernel.name) continue;
    ShapeCase sc{parse_shape(kernel, c.shape, "case"), c.flush_bytes < 0 ? default_flush : c.flush_bytes, c.lead_in,
                 c.dtype.empty() ? "" : std::string(k::to_string(*k::parse_dtype(c.dtype)))};
    auto same = std::find_if(out.begin(), out.end(), [&](const ShapeCase& s) {
      return s.shape.str() == sc.shape.str() && s.flush_bytes == sc.flush_bytes && s.lead_in == sc.lead_in &&
             s.dtype == sc.dtype;
    });
    if (same == out.end()) out.push_back(std::move(sc));
  }
  return out;
}

// The lead-in cases' instances, made once each (per dtype: the measured case's where
// the lead-in kernel has it).
class LeadIns {
 public:
  explicit LeadIns(std::uint64_t seed) : seed_(seed) {}
  k::Instance* get(const std::string& lead_in, k::Dtype dtype) {
    if (lead_in.empty()) return nullptr;
    auto [at, fresh] = made_.try_emplace(lead_in + '\n' + std::string(k::to_string(dtype)));
    if (fresh) {
      const auto space = lead_in.find(' ');
      const k::KernelInfo* kernel = k::find_kernel(lead_in.substr(0, space));
      if (kernel == nullptr || space == std::string::npos || kernel->dtypes.empty())
        throw UsageError("lead-in '" + lead_in + "': not a kernel and shape");
      const k::Dtype d = kernel->supports(dtype) ? dtype : kernel->dtypes.front();
      at->second = kernel->make(parse_shape(*kernel, lead_in.substr(space + 1), "lead-in"), d, seed_);
    }
    return at->second.get();
  }

 private:
  std::uint64_t seed_;
  std::map<std::string, std::unique_ptr<k::Instance>> made_;
};

// Reads and writes every element: evicts whatever the timed kernel left in cache.
template <class View>
void flush_caches(const View& buffer) {
  Kokkos::parallel_for(
      "sextant::compute::flush_caches", Kokkos::RangePolicy<>(0, buffer.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { buffer(i) = buffer(i) * 0.5 + 1.0; });
  Kokkos::fence();
}

std::vector<KernelMeasurement> measure_kernels(const MeasureOptions& o) {
  check_names(o);
  long long most_flushed = o.flush_bytes;
  for (const auto& c : o.cases) most_flushed = std::max(most_flushed, c.flush_bytes);
  Kokkos::View<double*> flush("sextant::compute::flush", most_flushed > 0 ? most_flushed / 8 : 0);
  const stats::StopRule rule = o.stop ? *o.stop : (o.quick ? MeasureOptions::quick_rule() : MeasureOptions::standard_rule());
  const k::ShapeSet set = o.quick ? k::ShapeSet::quick : (o.full_shapes ? k::ShapeSet::full : k::ShapeSet::quick);
  std::vector<KernelMeasurement> out;
  LeadIns leads(o.seed);
  for (const auto& kernel : k::registry()) {
    if (!selected(o.kernels, kernel.name) || !selected(o.families, kernel.family)) continue;
    const auto chosen = [&](k::Dtype dtype) {
      return o.dtypes.empty() ||
             std::any_of(o.dtypes.begin(), o.dtypes.end(), [&](const std::string& d) { return k::parse_dtype(d) == dtype; });
    };
    // A kernel named in the cases runs at those shapes only; others at their shape set.
    auto shapes = shapes_of_cases(kernel, o.cases, o.flush_bytes);
    if (shapes.empty())
      for (auto& shape : kernel.shapes(set)) shapes.push_back({std::move(shape), o.flush_bytes, "", ""});
    // Shape by shape, each in every dtype one after the other: the dtypes of a shape
    // meet the same load on a shared host, so their ratio (float32's peak over
    // float64's) is not the ratio of two moments' loads.
    for (const auto& [shape, flush_bytes, lead_in, case_dtype] : shapes)
      for (k::Dtype dtype : kernel.dtypes) {
        if (case_dtype.empty() ? !chosen(dtype) : case_dtype != k::to_string(dtype)) continue;
        KernelMeasurement m;
        m.flush_bytes = flush_bytes;
        m.lead_in = lead_in;
        k::Instance* lead = leads.get(lead_in, dtype);
        const auto flush_view = Kokkos::subview(flush, std::make_pair(0LL, std::max(0LL, flush_bytes) / 8));
        m.name = kernel.name;
        m.family = kernel.family;
        m.pass = kernel.pass;
        m.dtype = std::string(k::to_string(dtype));
        m.shape = shape.str();
        m.dims = shape.dims;
        m.counting = kernel.counting;
        m.flops = kernel.flops(shape, dtype);
        m.bytes = kernel.bytes(shape, dtype);
        auto instance = kernel.make(shape, dtype, o.seed);
        if (o.validate) {
          const k::Validation v = instance->validate();
          m.validated = true;
          m.valid = v.ok;
          m.wrong = v.wrong;
          m.error_ratio = v.worst;
          m.validation_message = v.message;
        }
        if (o.synchronize) o.synchronize();
        for (int w = 0; w < o.warmup; ++w) instance->run();
        const bool flushed = flush_view.extent(0) > 0;
        const bool lockstep = flushed && o.agree_more;
        const double start = now_seconds();
        for (bool more = true;;) {
          if (flushed) flush_caches(flush_view);
          if (lockstep && !o.agree_more(more)) break;
          if (lead) lead->run();
          const double t0 = now_seconds();
          instance->run();  // fences before returning
          m.seconds.push_back(now_seconds() - t0);
          auto reason = stats::should_stop(rule, m.seconds, now_seconds() - start);
          if (reason && m.seconds.size() >= o.min_runs) {
            if (more) m.stop_reason = *reason;  // the first reason this rank had
            more = false;
            if (!lockstep) break;
          }
        }
        m.summary = stats::summarize(m.seconds);
        if (o.progress) {
          std::ostringstream line;
          line << m.name << " " << m.dtype << " " << m.shape << ": median " << m.summary.median * 1e3 << " ms ("
               << m.seconds.size() << " runs), " << format_rate(m.flop_rate(), "FLOP/s") << ", "
               << format_rate(m.byte_rate(), "B/s");
          if (m.flush_bytes > 0) line << ", after " << format_bytes(double(m.flush_bytes)) << " flushed";
          if (!m.lead_in.empty()) line << ", each run after " << m.lead_in;
          if (m.validated) line << (m.valid ? ", valid" : ", WRONG: " + m.validation_message);
          o.progress(line.str());
        }
        out.push_back(std::move(m));
      }
  }
  return out;
}

bool all_valid(const std::vector<KernelMeasurement>& results) {
  return std::all_of(results.begin(), results.end(), [](const KernelMeasurement& m) { return m.valid; });
}

// --- working-set sweep ------------------------------------------------------------

SweepPlan plan_sweep(const SweepOptions& o) {
  SweepPlan p;
  const MachineInfo machine = read_machine_info();
  for (const auto& c : machine.caches) {
    if (c.type == "Instruction") continue;
    if (c.level == 1) p.l1_bytes = c.bytes;
    if (c.level == 2) p.l2_bytes = c.bytes;
  }
  p.llc_bytes = machine.last_level_cache_bytes();
  p.threads = std::max(1, int(Kokkos::DefaultExecutionSpace().concurrency()));
  const long long l1 = p.l1_bytes > 0 ? p.l1_bytes : 32 << 10;
  // A quarter of L1 per thread: L1 then holds two points of a quick sweep (one per
  // octave), so its plateau is a level of its own. Starting at half, L1 showed in one
  // point, the segmentation (two points per plateau) had to join it with L2's first,
  // and that residual outweighed the L3/DRAM step: L3 and DRAM came out merged.
  p.min_bytes = o.min_bytes > 0 ? o.min_bytes : std::max<long long>(4096, l1 / 4 * p.threads);
  std::ostringstream note;
  if (o.max_bytes > 0) {
    p.max_bytes = o.max_bytes;
    note << "range set by the caller";
  } else {
    const long long llc = p.llc_bytes > 0 ? p.llc_bytes : 64LL << 20;
    const long long want = 4 * llc;
    p.capped = want > o.cap_bytes;
    p.max_bytes = std::min(want, o.cap_bytes);
    note << "from a quarter of an L1 per thread to 4 x the last-level cache (" << (llc >> 20) << " MiB reported)";
    if (p.capped)
      note << ", capped at " << (o.cap_bytes >> 20) << " MiB: the reported LLC is large (a VM may report the "
           << "host's whole L3), and the largest point is only " << double(o.cap_bytes) / double(llc)
           << " x it";
  }
  p.max_bytes = std::max(p.max_bytes, p.min_bytes);
  p.note = note.str();
  const int per_octave = o.quick ? 1 : std::max(1, o.points_per_octave);
  const double octaves = std::log2(double(p.max_bytes) / double(p.min_bytes));
  const int steps = std::max(1, int(std::ceil(octaves * per_octave - 1e-9)));
  for (int s = 0; s <= steps; ++s) {
    const long long bytes = std::llround(double(p.min_bytes) * std::pow(2.0, octaves * s / steps));
    if (p.sizes.empty() || bytes > p.sizes.back()) p.sizes.push_back(bytes);
  }
  return p;
}

namespace {

template <class Scalar>
std::vector<BandwidthCurve> sweep_curves(const SweepOptions& o, const SweepPlan& plan, const stats::StopRule& rule) {
  using Exec = Kokkos::DefaultExecutionSpace;
  Exec exec;
  const std::int64_t max_elements = std::int64_t(plan.max_bytes / (2 * sizeof(Scalar))) + 1;
  k::View1<Scalar, Exec> a(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sweep_a"), max_elements);
  k::View1<Scalar, Exec> b(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sweep_b"), max_elements);
  k::View1<Scalar, Exec> c(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sweep_c"), max_elements);
  // First touch by the same chunks that sweep them, so pages sit near their thread.
  k::fill_uniform(exec, a, 1, 0.5, 1.5);
  k::fill_uniform(exec, b, 2, 0.5, 1.5);
  k::fill_uniform(exec, c, 3, 0.5, 1.5);
  exec.fence();

  std::vector<BandwidthCurve> curves = {{"stream_triad", 3, {}}, {"stream_dot", 2, {}}};
  for (auto& curve : curves) {
    const bool triad = curve.kernel == "stream_triad";
    for (long long bytes : plan.sizes) {
      BandwidthPoint pt;
      pt.elements = std::max<std::int64_t>(1, bytes / (curve.arrays * std::int64_t(sizeof(Scalar))));
      pt.bytes = pt.elements * curve.arrays * std::int64_t(sizeof(Scalar));
      if (pt.elements > max_elements) continue;
      const auto range = std::make_pair(std::int64_t(0), pt.elements);
      auto sa = Kokkos::subview(a, range), sb = Kokkos::subview(b, range), sc = Kokkos::subview(c, range);
      if (o.synchronize) o.synchronize();
      volatile Scalar sink = 0;
      auto launch = [&](int sweeps) {
        const double t0 = now_seconds();
        if (triad)
          k::stream_triad_repeated(exec, sa, sb, sc, Scalar(0.4), sweeps);
        else
          sink = sink + k::stream_dot_repeated(exec, sa, sb, sweeps);
        exec.fence();
        return now_seconds() - t0;
      };
      // Calibrate: enough sweeps per launch that launch overhead is small.
      launch(1);
      int sweeps = 1;
      for (double t = launch(1); t < o.min_sample_seconds && sweeps < (1 << 20); t = launch(sweeps))
        sweeps = int(std::min<double>(1 << 20, std::ceil(sweeps * std::max(2.0, 1.2 * o.min_sample_seconds / std::max(t, 1e-9)))));
      pt.sweeps_per_sample = sweeps;
      const double start = now_seconds();
      std::vector<double> samples;
      for (;;) {
        samples.push_back(launch(sweeps));
        pt.seconds.push_back(samples.back() / sweeps);
        if (samples.size() >= o.min_samples && stats::should_stop(rule, samples, now_seconds() - start)) break;
      }
      pt.summary = stats::summarize(pt.seconds);
      pt.gbytes_per_s = double(pt.bytes) / pt.summary.median * 1e-9;
      pt.best_gbytes_per_s = double(pt.bytes) / pt.summary.min * 1e-9;
      if (o.progress) {
        std::ostringstream line;
        line << curve.kernel << " " << (pt.bytes >> 10) << " KiB: " << pt.gbytes_per_s << " GB/s (median of "
             << pt.seconds.size() << " samples x " << sweeps << " sweeps)";
        o.progress(line.str());
      }
      curve.points.push_back(std::move(pt));
    }
  }
  return curves;
}

}  // namespace

CacheRetention measure_cache_retention(const RetentionOptions& o) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const MachineInfo machine = read_machine_info();
  long long l2 = 0;
  for (const auto& c : machine.caches)
    if (c.type != "Instruction" && c.level == 2) l2 = c.bytes;
  const long long llc = machine.last_level_cache_bytes() > 0 ? machine.last_level_cache_bytes() : 64LL << 20;
  CacheRetention out;
  out.probe_bytes = o.probe_bytes > 0 ? o.probe_bytes : std::max<long long>(2 * l2, 256 << 10);
  out.near_bytes = machine.private_cache_bytes() * Exec().concurrency();
  const long long max_distance = o.max_distance > 0 ? o.max_distance : std::min(4 * llc, o.cap_bytes);
  const int per_octave = o.quick ? 1 : 2;
  std::vector<long long> distances{0};
  for (double d = double(out.probe_bytes) / 4; d < double(max_distance) * 1.0001; d *= std::pow(2.0, 1.0 / per_octave))
    distances.push_back(std::llround(d));
  if (distances.back() < max_distance) distances.push_back(max_distance);

  const std::int64_t n = out.probe_bytes / std::int64_t(sizeof(double)), m = max_distance / std::int64_t(sizeof(double));
  Kokkos::View<double*> probe(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sextant::compute::retention_probe"), n);
  Kokkos::View<double*> other(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sextant::compute::retention_other"), m);
  Kokkos::deep_copy(probe, 1.0);
  Kokkos::deep_copy(other, 1.0);
  const int repetitions = o.quick ? 7 : 15;
  for (long long d : distances) {
    if (o.synchronize) o.synchronize();
    const std::int64_t span = d / std::int64_t(sizeof(double));
    std::vector<double> t;
    for (int r = 0; r < repetitions; ++r) {
      Kokkos::parallel_for(
          "sextant::compute::retention_write", Kokkos::RangePolicy<Exec>(0, n),
          KOKKOS_LAMBDA(const std::int64_t i) { probe(i) = probe(i) * 0.5 + 1.0; });
      if (span > 0)
        Kokkos::parallel_for(
            "sextant::compute::retention_stream", Kokkos::RangePolicy<Exec>(0, span),
            KOKKOS_LAMBDA(const std::int64_t i) { other(i) = other(i) * 0.5 + 1.0; });
      Kokkos::fence();
      // The read: a dot product of the probe with itself (one pass, independent lanes:
      // bound by where the probe is, not by an addition chain).
      const double t0 = now_seconds();
      const double sum = k::stream_dot(Exec(), probe, probe);
      t.push_back(now_seconds() - t0);
      if (!(sum > 0)) throw Error("cache retention probe: the probe read back " + std::to_string(sum));
    }
    out.points.push_back({d, stats::median(t), 0});
  }
  // Kept: (t_cold - t) / (t_cold - t_hot), t_hot the fastest read (right after the write
  // the probe's dirty lines still leaving L2 make a read slower than one from L3 a
  // little later), t_cold the farthest point's. Made non-increasing from the far end: a
  // read that was slow while farther ones were fast is noise, not a miss.
  double hot = out.points.front().seconds;
  for (const auto& p : out.points) hot = std::min(hot, p.seconds);
  const double cold = out.points.back().seconds, range = cold - hot;
  double kept = 0;
  for (auto it = out.points.rbegin(); it != out.points.rend(); ++it) {
    kept = std::max(kept, range > 0 ? std::clamp((cold - it->seconds) / range, 0.0, 1.0) : 0.0);
    it->kept = kept;
  }
  // The neighbours' traffic: the distance that evicts what time alone did.
  auto distance_of = [&](double k) {  // the curve read backwards; 0 while nothing is lost
    const auto& p = out.points;
    if (k >= p.front().kept) return 0.0;
    for (std::size_t i = 1; i < p.size(); ++i)
      if (k >= p[i].kept) {
        const double f = (p[i - 1].kept - k) / (p[i - 1].kept - p[i].kept);
        const double lo = double(p[i - 1].distance), hi = double(p[i].distance);
        return lo > 0 ? lo * std::pow(hi / lo, f) : f * hi;
      }
    return double(p.back().distance);  // at least: all gone
  };
  double dt = 0, tt = 0;
  for (double idle : o.quick ? std::vector<double>{1e-3, 4e-3, 16e-3} : std::vector<double>{1e-3, 2e-3, 4e-3, 8e-3, 16e-3}) {
    if (o.synchronize) o.synchronize();
    std::vector<double> t;
    for (int r = 0; r < repetitions; ++r) {
      Kokkos::parallel_for(
          "sextant::compute::retention_write", Kokkos::RangePolicy<Exec>(0, n),
          KOKKOS_LAMBDA(const std::int64_t i) { probe(i) = probe(i) * 0.5 + 1.0; });
      Kokkos::fence();
      for (const double until = now_seconds() + idle; now_seconds() < until;) {
      }
      const double t0 = now_seconds();
      const double sum = k::stream_dot(Exec(), probe, probe);
      t.push_back(now_seconds() - t0);
      if (!(sum > 0)) throw Error("cache retention probe: the probe read back " + std::to_string(sum));
    }
    const double median = stats::median(t);
    const double kept_idle = range > 0 ? std::clamp((cold - median) / range, 0.0, 1.0) : 1.0;
    out.idle.push_back({std::llround(idle * 1e9), median, kept_idle});
    const double d = distance_of(kept_idle);
    dt += d * idle, tt += idle * idle;
  }
  out.neighbour_bytes_per_second = tt > 0 ? dt / tt : 0;
  if (o.progress) {
    for (const auto& p : out.points)
      o.progress("cache retention: " + format_bytes(double(p.distance)) + " of other data between: probe read in " +
                 std::to_string(p.seconds * 1e6) + " us, " + std::to_string(int(std::lround(p.kept * 100))) + "% kept");
    for (const auto& p : out.idle)
      o.progress("cache retention: left alone " + std::to_string(double(p.distance) * 1e-6) + " ms: probe read in " +
                 std::to_string(p.seconds * 1e6) + " us, " + std::to_string(int(std::lround(p.kept * 100))) + "% kept");
    o.progress("cache retention: the neighbours' traffic evicts as " + format_rate(out.neighbour_bytes_per_second, "B/s") +
               " of other data would");
  }
  return out;
}

WorkingSetSweep sweep_bandwidth(const SweepOptions& o) {
  const auto dtype = k::parse_dtype(o.dtype);
  if (!dtype || (*dtype != k::Dtype::float64 && *dtype != k::Dtype::float32))
    throw UsageError("the bandwidth sweep runs on float64 or float32, not '" + o.dtype + "'");
  WorkingSetSweep out;
  out.dtype = std::string(k::to_string(*dtype));
  out.plan = plan_sweep(o);
  if (o.progress) o.progress("working-set sweep: " + out.plan.note);
  const stats::StopRule rule = o.stop ? *o.stop : (o.quick ? stats::StopRule{0.05, 0.05, 3, 50} : stats::StopRule{0.02, 0.3, 5, 200});
  out.curves = *dtype == k::Dtype::float64 ? sweep_curves<double>(o, out.plan, rule) : sweep_curves<float>(o, out.plan, rule);
  return out;
}

}  // namespace sextant::compute
