#include "models/compute_model.hpp"

#include <algorithm>
#include <string_view>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/error.hpp"
#include "core/schema.hpp"
#include "core/units.hpp"

namespace sextant::model {
namespace {

// /compute/kernels/<kernel>/<dtype>: datasets shape, flops, bytes, median (per shape).
std::vector<KernelPoint> read_kernel_points(const h5::Group& compute) {
  std::vector<KernelPoint> out;
  if (!compute.has("kernels")) return out;
  h5::Group kernels = compute.group("kernels");
  for (const auto& name : kernels.children()) {
    h5::Group kg = kernels.group(name);
    for (const auto& dtype : kg.children()) {
      h5::Group g = kg.group(dtype);
      auto shapes = g.dataset("shape").read_strings();
      auto flops = g.dataset("flops").read_doubles();
      auto bytes = g.dataset("bytes").read_doubles();
      auto median = g.dataset("median").read_floats();
      if (flops.size() != shapes.size() || bytes.size() != shapes.size() || median.size() != shapes.size())
        throw Error(g.where() + ": datasets shape, flops, bytes and median differ in length");
      std::vector<double> flushed(shapes.size(), 0.0);
      if (g.has("flush_bytes")) flushed = g.dataset("flush_bytes").read_doubles();
      if (flushed.size() != shapes.size()) throw Error(g.where() + ": datasets shape and flush_bytes differ in length");
      std::string family = g.attr_string("family");
      for (std::size_t i = 0; i < shapes.size(); ++i) {
        const std::string at = "shape " + shapes[i] + ": ";
        require_value(std::isfinite(flops[i]) && flops[i] >= 0 && std::isfinite(bytes[i]) && bytes[i] >= 0, g,
                      at + "flops " + format_value(flops[i]) + ", bytes " + format_value(bytes[i]));
        if (std::isnan(median[i])) continue;  // not measured
        require_value(std::isfinite(median[i]) && median[i] > 0, g,
                      at + "median " + format_value(median[i]) + " s (a measured time is finite and > 0)");
        require_value(std::isfinite(flushed[i]) && flushed[i] >= 0, g, at + "flush_bytes " + format_value(flushed[i]));
        out.push_back({name, family, dtype, shapes[i], flops[i], bytes[i], median[i], flushed[i]});
      }
    }
  }
  return out;
}

// A retention curve: ascending x, shares in [0, 1] that never grow.
void read_curve(const h5::Group& g, const std::string& x_name, const std::string& kept_name, std::vector<double>& x,
                std::vector<double>& kept) {
  x = g.dataset(x_name).read_doubles();
  kept = g.dataset(kept_name).read_doubles();
  require_value(x.size() == kept.size() && !x.empty(), g, x_name + " and " + kept_name + " differ in length or are empty");
  for (std::size_t i = 0; i < x.size(); ++i) {
    require_value(std::isfinite(x[i]) && x[i] >= 0 && (i == 0 || x[i] > x[i - 1]), g,
                  x_name + " " + format_value(x[i]) + " (finite, >= 0, ascending)");
    require_value(kept[i] >= 0 && kept[i] <= 1 && (i == 0 || kept[i] <= kept[i - 1]), g,
                  kept_name + " " + format_value(kept[i]) + " (in [0, 1], never growing)");
  }
}

// /compute/retention of a results or a model file.
CacheRetention read_retention(const h5::Group& g) {
  CacheRetention r;
  read_curve(g, "distance_bytes", "kept", r.distance, r.kept);
  if (g.has("median") && g.has_attr("probe_bytes")) {  // a results file: the probe's own times
    const auto t = g.dataset("median").read_doubles();
    const double probe = double(g.attr_int("probe_bytes"));
    if (t.size() == r.distance.size() && probe > 0)
      r.miss_seconds_per_byte = std::max(0.0, t.back() - *std::min_element(t.begin(), t.end())) / probe;
  }
  if (g.has_attr("miss_seconds_per_byte")) {
    r.miss_seconds_per_byte = g.attr_double("miss_seconds_per_byte");
    require_value(std::isfinite(r.miss_seconds_per_byte) && r.miss_seconds_per_byte >= 0, g,
                  "miss_seconds_per_byte " + format_value(r.miss_seconds_per_byte) + " (finite, >= 0)");
  }
  if (g.has_attr("neighbour_bytes_per_second")) {
    r.neighbour_bytes_per_second = g.attr_double("neighbour_bytes_per_second");
    require_value(std::isfinite(r.neighbour_bytes_per_second) && r.neighbour_bytes_per_second >= 0, g,
                  "neighbour_bytes_per_second " + format_value(r.neighbour_bytes_per_second) + " (finite, >= 0)");
  }
  if (g.has_attr("near_bytes")) {
    r.near_bytes = g.attr_double("near_bytes");
    require_value(std::isfinite(r.near_bytes) && r.near_bytes >= 0, g, "near_bytes " + format_value(r.near_bytes) + " (finite, >= 0)");
  }
  return r;
}

// /compute/operators (or operators_hot): a group per family and dtype.
std::vector<OperatorModel> read_operators(const h5::Group& ops) {
  std::vector<OperatorModel> out;
  for (const auto& family : ops.children()) {
    h5::Group fg = ops.group(family);
    for (const auto& dtype : fg.children()) {
      h5::Group g = fg.group(dtype);
      OperatorModel o;
      o.family = family;
      o.dtype = dtype;
      o.e_compute = g.attr_double("e_compute");
      o.e_memory = g.attr_double("e_memory");
      o.t0 = g.attr_double("t0");
      o.median_rel_error = g.attr_double("median_rel_error");
      o.shapes = static_cast<std::size_t>(g.attr_int("shapes"));
      require_value(o.e_compute > 0 && o.e_compute <= 1, g, "e_compute " + format_value(o.e_compute) + " (must be in (0, 1])");
      require_value(o.e_memory > 0 && o.e_memory <= 1, g, "e_memory " + format_value(o.e_memory) + " (must be in (0, 1])");
      require_value(std::isfinite(o.t0) && o.t0 >= 0, g, "t0 " + format_value(o.t0) + " s (must be finite, >= 0)");
      out.push_back(o);
    }
  }
  return out;
}

void write_operators(h5::Group ops, const std::vector<OperatorModel>& models) {
  for (const auto& o : models) {
    h5::Group g = ops.create_group(o.family).create_group(o.dtype);
    g.set_attr("e_compute", o.e_compute);
    g.set_attr("e_memory", o.e_memory);
    g.set_attr("t0", o.t0);
    g.set_attr("median_rel_error", o.median_rel_error);
    g.set_attr("shapes", static_cast<std::int64_t>(o.shapes));
  }
}

}  // namespace

std::string family_key(const std::string& family) { return "family:" + family; }

// Every key=value of `part` appears in `whole` (a plan's shape may carry more keys).
bool shape_contains(const std::string& whole, const std::string& part) {
  // Item by item without copies: a layout search asks this for every point per op.
  const auto has = [&whole](std::string_view item) {
    for (std::size_t start = 0; start <= whole.size();) {
      const std::size_t comma = std::min(whole.find(',', start), whole.size());
      if (std::string_view(whole).substr(start, comma - start) == item) return true;
      start = comma + 1;
    }
    return false;
  };
  for (std::size_t start = 0; start < part.size();) {
    const std::size_t comma = std::min(part.find(',', start), part.size());
    if (comma > start && !has(std::string_view(part).substr(start, comma - start))) return false;
    start = comma + 1;
  }
  return true;
}

std::string registry_kernel(const std::string& kernel, const std::string& shape) {
  if ((kernel == "gemm" || kernel == "vendor_gemm") && shape_contains(shape, "beta=1")) return kernel + "_accumulate";
  return kernel;
}

std::string variant_key(const std::string& kernel, const std::string& shape) {
  // Transposed operands change a GEMM's memory access, not its counts: a variant each.
  std::string flags;
  for (const char* key : {"ta=", "tb="}) {
    auto at = shape.find(key);
    if (at != std::string::npos && (at == 0 || shape[at - 1] == ','))
      flags += (flags.empty() ? "" : ",") + shape.substr(at, shape.find(',', at) - at);
  }
  return flags.empty() ? kernel : kernel + "[" + flags + "]";
}

ComputeMeasurements read_compute_results(const std::string& results_path) {
  h5::File file = open_checked(results_path, results_schema);
  if (!file.has("compute")) throw Error(results_path + ": no /compute group (run the compute suite)");
  h5::Group compute = file.group("compute");
  ComputeMeasurements r;
  if (compute.has_attr("threads")) r.threads = static_cast<int>(compute.attr_int("threads"));
  r.points = read_kernel_points(compute);
  if (compute.has_attr("cache_bytes")) r.caches = compute.attr_doubles("cache_bytes");
  if (compute.has("retention")) r.retention = read_retention(compute.group("retention"));
  if (compute.has("sweep")) {
    // The curve of triad in float64 where it is there, else the first one stored.
    const auto first_child = [](h5::Group& g, const char* what) {
      const auto children = g.children();
      if (children.empty()) throw Error(g.where() + ": no " + what + " in the working-set sweep (an empty group)");
      return children.front();
    };
    h5::Group sweep = compute.group("sweep");
    h5::Group kg = sweep.group(sweep.has("triad") ? std::string("triad") : first_child(sweep, "kernel"));
    h5::Group g = kg.group(kg.has("float64") ? std::string("float64") : first_child(kg, "dtype"));
    auto ws = g.dataset("working_set").read_doubles();
    auto bw = g.dataset("bandwidth").read_floats();
    if (ws.size() != bw.size()) throw Error(g.where() + ": datasets working_set and bandwidth differ in length");
    for (std::size_t i = 0; i < ws.size(); ++i) {
      require_value(std::isfinite(ws[i]) && ws[i] > 0 && (i == 0 || ws[i] > ws[i - 1]), g,
                    "working set " + format_value(ws[i]) + " bytes (finite, > 0, ascending)");
      require_value(std::isfinite(bw[i]) && bw[i] > 0, g,
                    "bandwidth " + format_value(bw[i]) + " B/s at " + format_value(ws[i]) + " bytes");
      r.sweep.push_back({ws[i], bw[i]});
    }
  }
  return r;
}

ComputeModel ComputeModel::fit_results(const std::string& results_path) {
  ComputeMeasurements measured_file = read_compute_results(results_path);
  ComputeModel m;
  m.threads = measured_file.threads;
  m.points = std::move(measured_file.points);
  m.retention = std::move(measured_file.retention);

  // Peak: the best rate of the peak-FLOP kernels (over the accumulator sweep), per dtype.
  for (const auto& p : m.points)
    if (p.family == "peak" && p.flops / p.seconds > m.ceilings.peak_flops[p.dtype]) {
      m.ceilings.peak_flops[p.dtype] = p.flops / p.seconds;
      m.peak_shape[p.dtype] = p.shape;
    }
  // Memory levels: plateaus of the triad working-set sweep (float64 if present).
  if (measured_file.sweep.size() >= 2)
    m.ceilings.memory = detect_memory_levels(measured_file.sweep, measured_file.caches);
  if (m.ceilings.peak_flops.empty()) throw Error(results_path + ": /compute has no peak-FLOP measurement");
  if (m.ceilings.memory.empty()) throw Error(results_path + ": /compute has no working-set sweep");

  // Every kernel is judged against the measured ceilings; one that beats a ceiling
  // raises it (the ceiling kernel missed the hardware's peak), so that the operator
  // models below are fitted against ceilings no kernel exceeds.
  std::vector<OperatorSample> measured;
  for (const auto& p : m.points)
    if (p.family != "peak" && m.ceilings.peak_flops.count(p.dtype))
      measured.push_back({p.family, p.dtype, p.kernel + " " + p.shape, p.flops, p.bytes, p.seconds});
  for (const auto& v : ceiling_violations(m.ceilings, measured))
    m.violations.push_back(v.sample->shape + " (" + v.sample->dtype + "): " + std::to_string(v.ratio) + "x the " +
                           v.ceiling + " ceiling");
  m.raised = raise_ceilings(m.ceilings, measured);

  // One model per kernel (layernorm_backward and layernorm_forward differ), and one per
  // registry family for operators the suite does not measure by name; in one cache state
  // per shape, the most flushed one, and where the train suite measured a shape's hot
  // twin too, a second set from those (the cache model's two ends, for shapes no one
  // measured).
  auto fit = [&](auto&& chosen) {
    std::map<std::pair<std::string, std::string>, std::vector<OperatorSample>> families;
    for (const auto& p : m.points)
      if (p.family != "peak" && m.ceilings.peak_flops.count(p.dtype) && chosen(p)) {
        families[{p.kernel, p.dtype}].push_back({p.kernel, p.dtype, p.shape, p.flops, p.bytes, p.seconds});
        std::string v = variant_key(p.kernel, p.shape);
        if (v != p.kernel) families[{v, p.dtype}].push_back({v, p.dtype, p.shape, p.flops, p.bytes, p.seconds});
        families[{family_key(p.family), p.dtype}].push_back(
            {family_key(p.family), p.dtype, p.shape, p.flops, p.bytes, p.seconds});
      }
    std::vector<OperatorModel> out;
    for (const auto& [key, samples] : families)
      if (samples.size() >= 2) out.push_back(fit_operator(m.ceilings, samples));
    return out;
  };
  m.operators = fit([&](const KernelPoint& p) { return m.measured(p.kernel, p.dtype, p.shape) == &p; });
  m.hot_operators = fit([&](const KernelPoint& p) {
    const KernelPoint* reference = m.measured(p.kernel, p.dtype, p.shape);
    return p.flush_bytes == 0 && reference != &p && reference->flush_bytes > 0;
  });
  return m;
}

// What the compute part may hold is checked where it is read (require_value).
ComputeModel ComputeModel::read(const h5::Group& root) {
  h5::Group c = root.group("compute");
  ComputeModel m;
  m.threads = static_cast<int>(c.attr_int("threads"));
  h5::Group ceil = c.group("ceilings");
  for (const auto& name : ceil.attr_names())
    if (name.rfind("peak_flops_", 0) == 0) m.ceilings.peak_flops[name.substr(11)] = ceil.attr_double(name);
  auto names = ceil.dataset("level").read_strings();
  auto lo = ceil.dataset("lo_bytes").read_doubles(), hi = ceil.dataset("hi_bytes").read_doubles();
  auto bw = ceil.dataset("bandwidth").read_doubles();
  if (lo.size() != names.size() || hi.size() != names.size() || bw.size() != names.size())
    throw Error(ceil.where() + ": memory level datasets differ in length");
  for (const auto& [dtype, peak] : m.ceilings.peak_flops)
    require_value(std::isfinite(peak) && peak > 0, ceil, "peak_flops_" + dtype + " " + format_value(peak) + " (must be > 0)");
  for (std::size_t i = 0; i < names.size(); ++i) {
    require_value(std::isfinite(bw[i]) && bw[i] > 0, ceil, "level " + names[i] + ": bandwidth " + format_value(bw[i]));
    require_value(std::isfinite(lo[i]) && std::isfinite(hi[i]) && 0 <= lo[i] && lo[i] <= hi[i] &&
                (i == 0 || lo[i] >= lo[i - 1]),
            ceil, "level " + names[i] + ": working sets " + format_value(lo[i]) + " .. " + format_value(hi[i]) + " (must ascend)");
    m.ceilings.memory.push_back({names[i], lo[i], hi[i], bw[i], 0});
  }
  for (const auto& name : ceil.attr_names())
    if (name.rfind("peak_shape_", 0) == 0) m.peak_shape[name.substr(11)] = ceil.attr_string(name);
  if (ceil.has("raised")) m.raised = ceil.dataset("raised").read_strings();
  if (c.has("ceiling_violations")) m.violations = c.dataset("ceiling_violations").read_strings();
  m.operators = read_operators(c.group("operators"));
  if (c.has("operators_hot")) m.hot_operators = read_operators(c.group("operators_hot"));
  if (c.has("retention")) m.retention = read_retention(c.group("retention"));
  if (c.has("points")) {
    h5::Group p = c.group("points");
    auto kernel = p.dataset("kernel").read_strings(), family = p.dataset("family").read_strings();
    auto dtype = p.dataset("dtype").read_strings(), shape = p.dataset("shape").read_strings();
    auto flops = p.dataset("flops").read_doubles(), bytes = p.dataset("bytes").read_doubles();
    auto sec = p.dataset("seconds").read_doubles();
    // Files before the cache model recorded no flush: one state per shape, read as hot.
    auto flushed = p.has("flush_bytes") ? p.dataset("flush_bytes").read_doubles() : std::vector<double>(kernel.size(), 0.0);
    for (std::size_t n : {family.size(), dtype.size(), shape.size(), flops.size(), bytes.size(), sec.size(), flushed.size()})
      require_value(n == kernel.size(), p,
                    "datasets differ in length (kernel " + std::to_string(kernel.size()) + ", another " +
                        std::to_string(n) + ")");
    for (std::size_t i = 0; i < kernel.size(); ++i) {
      require_value(std::isfinite(sec[i]) && sec[i] > 0 && std::isfinite(flops[i]) && flops[i] >= 0 &&
                  std::isfinite(bytes[i]) && bytes[i] >= 0,
              p, "point " + kernel[i] + " " + shape[i] + ": seconds " + format_value(sec[i]) + ", flops " + format_value(flops[i]) +
                     ", bytes " + format_value(bytes[i]));
      require_value(std::isfinite(flushed[i]) && flushed[i] >= 0, p,
                    "point " + kernel[i] + " " + shape[i] + ": flush_bytes " + format_value(flushed[i]));
      m.points.push_back({kernel[i], family[i], dtype[i], shape[i], flops[i], bytes[i], sec[i], flushed[i]});
    }
  }
  return m;
}

void ComputeModel::write_into(h5::Group& root) const {
  h5::Group c = root.create_group("compute");
  c.set_attr("threads", std::int64_t{threads});
  c.set_attr("model", "t = max(F / (e_compute * peak), B / (e_memory * BW(level of B))) + t0");
  h5::Group ceil = c.create_group("ceilings");
  for (const auto& [dtype, p] : ceilings.peak_flops) ceil.set_attr("peak_flops_" + dtype, p);
  for (const auto& [dtype, shape] : peak_shape) ceil.set_attr("peak_shape_" + dtype, shape);
  // Ceilings a kernel beat, raised to its rate: the file says so, and which.
  ceil.set_attr("raised_to_kernel_rate", std::int64_t{!raised.empty()});
  ceil.write("raised", raised);
  std::vector<std::string> names;
  std::vector<double> lo, hi, bw;
  for (const auto& l : ceilings.memory) {
    names.push_back(l.name);
    lo.push_back(l.lo_bytes);
    hi.push_back(l.hi_bytes);
    bw.push_back(l.bandwidth);
  }
  ceil.write("level", names);
  ceil.write("lo_bytes", lo);
  ceil.write("hi_bytes", hi);
  ceil.write("bandwidth", bw);
  write_operators(c.create_group("operators"), operators);
  if (!hot_operators.empty()) write_operators(c.create_group("operators_hot"), hot_operators);
  h5::Group p = c.create_group("points");
  std::vector<std::string> kernel, family, dtype, shape;
  std::vector<double> flops, bytes, sec, flushed;
  for (const auto& k : points) {
    flushed.push_back(k.flush_bytes);
    kernel.push_back(k.kernel);
    family.push_back(k.family);
    dtype.push_back(k.dtype);
    shape.push_back(k.shape);
    flops.push_back(k.flops);
    bytes.push_back(k.bytes);
    sec.push_back(k.seconds);
  }
  p.write("kernel", kernel);
  p.write("family", family);
  p.write("dtype", dtype);
  p.write("shape", shape);
  p.write("flops", flops);
  p.write("bytes", bytes);
  p.write("seconds", sec);
  p.write("flush_bytes", flushed);
  c.write("ceiling_violations", violations);
  if (!retention.distance.empty()) {
    h5::Group r = c.create_group("retention");
    r.write("distance_bytes", retention.distance);
    r.write("kept", retention.kept);
    if (retention.near_bytes > 0) r.set_attr("near_bytes", retention.near_bytes);
    if (retention.miss_seconds_per_byte > 0) r.set_attr("miss_seconds_per_byte", retention.miss_seconds_per_byte);
    if (retention.neighbour_bytes_per_second > 0)
      r.set_attr("neighbour_bytes_per_second", retention.neighbour_bytes_per_second);
  }
}

const OperatorModel* ComputeModel::find(const std::string& family, const std::string& dtype) const {
  for (const auto& o : operators)
    if (o.family == family && o.dtype == dtype) return &o;
  return nullptr;
}

std::string ComputeModel::o_bound(const KernelPoint& p) const {
  OperatorModel unit;
  unit.dtype = p.dtype;
  return unit.bound(ceilings, p.flops, p.bytes);
}

const KernelPoint* ComputeModel::measured(const std::string& kernel, const std::string& dtype,
                                          const std::string& shape) const {
  const KernelPoint* best = nullptr;
  for (const auto& p : points)
    if (p.kernel == kernel && p.dtype == dtype && shape_contains(shape, p.shape) &&
        (!best || p.flush_bytes > best->flush_bytes))
      best = &p;
  return best;
}

std::optional<ComputeModel::CacheBounds> ComputeModel::cache_bounds(const std::string& op_name, const std::string& dtype,
                                                                    const std::string& shape, double flops, double bytes,
                                                                    const std::string& family) const {
  const std::string op = registry_kernel(op_name, shape);
  if (!use_points) {
    const OperatorModel* hot = lookup(hot_operators, op, dtype, family, shape);
    const OperatorModel* cold = lookup(operators, op, dtype, family, shape);
    if (!hot || !cold) return std::nullopt;
    return CacheBounds{hot->predict(ceilings, flops, bytes), cold->predict(ceilings, flops, bytes)};
  }
  const KernelPoint* cold = measured(op, dtype, shape);
  if (!cold || !(cold->flush_bytes > 0)) return std::nullopt;
  std::optional<CacheBounds> out;
  const KernelPoint* warm = nullptr;
  for (const auto& p : points) {
    if (p.kernel != op || p.dtype != dtype || p.shape != cold->shape) continue;
    if (p.flush_bytes == 0) out = CacheBounds{p.seconds, cold->seconds, std::nullopt};
    if (p.flush_bytes > 0 && p.flush_bytes < cold->flush_bytes && (!warm || p.flush_bytes > warm->flush_bytes)) warm = &p;
  }
  if (out && warm) out->warm = warm->seconds;
  if (out) out->miss_seconds_per_byte = retention.miss_seconds_per_byte;
  return out;
}

double ComputeModel::CacheBounds::in_step(const OperandMisses& m) const {
  // Noise can put a warm median outside [hot, cold]: the cost stays monotone in the misses.
  const double w = warm ? std::clamp(*warm, std::min(hot, cold), std::max(hot, cold)) : hot;
  const double near_lost = warm && m.near_repeated > 0 ? m.far_weight() * (w - hot) : 0;
  if (miss_seconds_per_byte > 0)  // the bytes the step misses beyond the hot run's, at the probe's cost
    return hot + near_lost + std::max(0.0, m.in_step - m.repeated) * m.bytes * miss_seconds_per_byte;
  if (!warm || !(m.near_repeated > 0)) return hot + m.cold_weight() * (cold - hot);  // two states to weigh
  return hot + near_lost + m.cold_weight() * (cold - w);
}

bool ComputeModel::has_cache_bounds() const {
  if (!use_points) return !hot_operators.empty();
  bool hot = false, cold = false;
  for (const auto& p : points) (p.flush_bytes > 0 ? cold : hot) = true;
  return hot && cold;
}

const OperatorModel* ComputeModel::lookup(const std::vector<OperatorModel>& set, const std::string& op,
                                          const std::string& dtype, const std::string& family,
                                          const std::string& shape) const {
  auto in = [&](const std::string& name) -> const OperatorModel* {
    for (const auto& o : set)
      if (o.family == name && o.dtype == dtype) return &o;
    return nullptr;
  };
  const OperatorModel* o = shape.empty() ? nullptr : in(variant_key(op, shape));
  if (!o) o = in(op);
  if (!o && !family.empty()) o = in(family_key(family));
  return o;
}

std::optional<CacheRetention> ComputeModel::cache_retention() const {
  if (!retention.distance.empty()) return retention;
  const auto& levels = ceilings.memory;
  for (std::size_t i = 1; i < levels.size(); ++i)
    if (levels[i].name == "DRAM" && levels[i].lo_bytes > levels[i - 1].hi_bytes)
      return CacheRetention{{levels[i - 1].hi_bytes, levels[i].lo_bytes}, {1, 0}};
  return std::nullopt;
}

std::vector<OperatorHoldout> operator_holdout(const std::string& results_path) {
  ComputeModel m = ComputeModel::fit_results(results_path);
  std::map<std::pair<std::string, std::string>, std::vector<OperatorSample>> ops;
  for (const auto& p : m.points)
    if (p.family != "peak" && m.ceilings.peak_flops.count(p.dtype) && m.measured(p.kernel, p.dtype, p.shape) == &p) {
      std::string v = variant_key(p.kernel, p.shape);
      ops[{v, p.dtype}].push_back({v, p.dtype, p.shape, p.flops, p.bytes, p.seconds});
    }
  std::vector<OperatorHoldout> out;
  for (auto& [key, samples] : ops) {
    if (samples.size() < 4) continue;
    std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.flops + a.bytes < b.flops + b.bytes; });
    std::vector<OperatorSample> fit, test;
    for (std::size_t i = 0; i < samples.size(); ++i) (i % 2 == 0 ? fit : test).push_back(samples[i]);
    OperatorModel om = fit_operator(m.ceilings, fit);
    std::vector<double> errs;
    for (const auto& t : test) errs.push_back(std::fabs(om.predict(m.ceilings, t.flops, t.bytes) / t.seconds - 1));
    std::sort(errs.begin(), errs.end());
    double med = errs.size() % 2 ? errs[errs.size() / 2] : 0.5 * (errs[errs.size() / 2 - 1] + errs[errs.size() / 2]);
    out.push_back({key.first, key.second, fit.size(), test.size(), med, errs.back()});
  }
  return out;
}

DensePath ComputeModel::measured_dense_path() const {
  for (const auto& o : operators)
    if (o.family == "vendor_gemm") return DensePath::vendor;
  return DensePath::portable;
}

ComputeModel::Estimate ComputeModel::predict(const std::string& op_name, const std::string& dtype, double flops,
                                             double bytes, const std::string& family, const std::string& shape) const {
  const std::string op = registry_kernel(op_name, shape);
  Estimate e;
  if (use_points && !shape.empty())
    if (const KernelPoint* p = measured(op, dtype, shape)) {
      e.seconds = p->seconds;
      e.model = "measured";
      e.bound = o_bound(*p);
      e.calibrated = true;
      return e;
    }
  if (const OperatorModel* o = lookup(operators, op, dtype, family, shape)) {
    e.model = o->family;
    e.seconds = o->predict(ceilings, flops, bytes);
    e.bound = o->bound(ceilings, flops, bytes);
    e.calibrated = true;
    return e;
  }
  // No calibration for this family: the roofline bound (efficiency 1, no fixed cost).
  OperatorModel bound;
  bound.family = op;
  bound.dtype = dtype;
  e.seconds = bound.predict(ceilings, flops, bytes);
  e.bound = bound.bound(ceilings, flops, bytes);
  return e;
}

}  // namespace sextant::model
