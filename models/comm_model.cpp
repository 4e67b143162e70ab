#include "models/comm_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>

#include "core/error.hpp"
#include "core/h5.hpp"

namespace sextant::model {
namespace {

// Walks comm/<level>/<benchmark>/<dtype>/p<ranks> groups (one per rank count).
template <class Fn>
void for_each_comm_group(const h5::Group& root, Fn fn) {
  if (!root.has("comm")) return;
  h5::Group comm = root.group("comm");
  for (const auto& level : comm.children()) {
    h5::Group lg = comm.group(level);
    for (const auto& bench : lg.children()) {
      h5::Group bg = lg.group(bench);
      for (const auto& dtype : bg.children()) {
        h5::Group dg = bg.group(dtype);
        for (const auto& ranks : dg.children())
          if (ranks.size() > 1 && ranks[0] == 'p') fn(dg.group(ranks), level, bench, dtype);
      }
    }
  }
}

void write_fit(h5::Group g, const CommFit& f) {
  g.set_attr("view", f.view);
  g.set_attr("ranks", std::int64_t{f.ranks});
  g.set_attr("oversubscribed", std::int64_t{f.oversubscribed});
  g.set_attr("busbw_factor", f.busbw_factor);
  g.set_attr("data_bytes_per_byte", f.data_bytes_per_byte);
  g.set_attr("bytes_min", f.bytes_min);
  g.set_attr("bytes_max", f.bytes_max);
  g.set_attr("criterion", f.fit.criterion);
  g.set_attr("model", "hockney piecewise: t = alpha + beta * bytes per segment");
  auto col = [&](auto get) {
    std::vector<double> v;
    for (const auto& s : f.fit.segments) v.push_back(get(s));
    return v;
  };
  g.write("lo_bytes", col([](const Segment& s) { return s.lo_bytes; }));
  g.write("hi_bytes", col([](const Segment& s) { return s.hi_bytes; }));
  g.write("alpha", col([](const Segment& s) { return s.alpha; }));
  g.write("beta", col([](const Segment& s) { return s.beta; }));
  g.write("alpha_ci_lo", col([](const Segment& s) { return s.alpha_ci.lo; }));
  g.write("alpha_ci_hi", col([](const Segment& s) { return s.alpha_ci.hi; }));
  g.write("beta_ci_lo", col([](const Segment& s) { return s.beta_ci.lo; }));
  g.write("beta_ci_hi", col([](const Segment& s) { return s.beta_ci.hi; }));
  g.write("r2", col([](const Segment& s) { return s.r2; }));
  g.write("rms_rel_residual", col([](const Segment& s) { return s.rms_rel_residual; }));
  g.write("points", col([](const Segment& s) { return static_cast<double>(s.points); }));
}

CommFit read_fit(const h5::Group& g, const std::string& level, const std::string& bench, const std::string& dtype) {
  CommFit f;
  f.benchmark = bench;
  f.level = level;
  f.dtype = dtype;
  f.view = g.attr_string("view");
  f.ranks = static_cast<int>(g.attr_int("ranks"));
  f.oversubscribed = g.attr_int("oversubscribed") != 0;
  f.busbw_factor = g.attr_double("busbw_factor");
  f.data_bytes_per_byte = g.attr_double("data_bytes_per_byte");
  f.bytes_min = g.attr_double("bytes_min");
  f.bytes_max = g.attr_double("bytes_max");
  f.fit.criterion = g.attr_double("criterion");
  auto lo = g.dataset("lo_bytes").read_doubles(), hi = g.dataset("hi_bytes").read_doubles();
  auto a = g.dataset("alpha").read_doubles(), b = g.dataset("beta").read_doubles();
  auto alo = g.dataset("alpha_ci_lo").read_doubles(), ahi = g.dataset("alpha_ci_hi").read_doubles();
  auto blo = g.dataset("beta_ci_lo").read_doubles(), bhi = g.dataset("beta_ci_hi").read_doubles();
  auto r2 = g.dataset("r2").read_doubles(), rms = g.dataset("rms_rel_residual").read_doubles();
  auto pts = g.dataset("points").read_doubles();
  for (auto* v : {&hi, &a, &b, &alo, &ahi, &blo, &bhi, &r2, &rms, &pts})
    if (v->size() != lo.size()) throw Error(g.where() + ": segment datasets differ in length");
  if (lo.empty()) throw Error(g.where() + ": no segments");
  for (std::size_t i = 0; i < lo.size(); ++i)
    f.fit.segments.push_back({lo[i], hi[i], a[i], b[i], {alo[i], ahi[i]}, {blo[i], bhi[i]}, r2[i], rms[i],
                              static_cast<std::size_t>(pts[i])});
  return f;
}

}  // namespace

CommModel CommModel::fit_results(const std::string& results_path, const FitOptions& options) {
  h5::File file = open_checked(results_path, results_schema);
  CommModel m;
  m.source = read_provenance(file.group("meta"));
  m.source_file = results_path;
  for_each_comm_group(file, [&](const h5::Group& g, const std::string& level, const std::string& bench,
                                const std::string& dtype) {
    auto bytes = g.dataset("bytes").read_doubles();
    auto median = g.dataset("median").read_doubles();
    auto data_bytes = g.dataset("data_bytes").read_doubles();
    auto valid = g.dataset("valid").read_doubles();
    if (median.size() != bytes.size() || data_bytes.size() != bytes.size() || valid.size() != bytes.size())
      throw Error(g.where() + ": datasets bytes, median, data_bytes and valid differ in length");
    // Bandwidth benchmarks time a window of messages: model one message of the stream.
    double window = g.has_attr("window") ? std::max<double>(1, static_cast<double>(g.attr_int("window"))) : 1;
    std::vector<Point> pts;
    double ratio = 1;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      if (valid[i] < 1 || !(median[i] > 0)) continue;
      pts.push_back({bytes[i], median[i] / window});
      if (bytes[i] > 0) ratio = data_bytes[i] / bytes[i] / window;
    }
    if (pts.size() < options.min_points_per_segment) {
      std::fprintf(stderr, "sextant fit: %s: %zu usable sizes, too few to fit: skipped\n", g.where().c_str(),
                   pts.size());
      return;
    }
    CommFit f;
    f.benchmark = bench;
    f.level = level;
    f.dtype = dtype;
    f.ranks = static_cast<int>(g.attr_int("ranks"));
    f.oversubscribed = g.attr_int("oversubscribed") != 0;
    f.busbw_factor = g.attr_double("busbw_factor");
    f.data_bytes_per_byte = ratio;
    f.fit = fit_piecewise(pts, options);
    f.bytes_min = pts.front().bytes;
    f.bytes_max = pts.front().bytes;
    for (const auto& p : pts) {
      f.bytes_min = std::min(f.bytes_min, p.bytes);
      f.bytes_max = std::max(f.bytes_max, p.bytes);
    }
    m.fits.push_back(std::move(f));
  });
  if (m.fits.empty()) throw Error(results_path + ": no communication benchmark with enough sizes to fit");
  return m;
}

CommModel CommModel::read(const std::string& model_path) {
  h5::File file = open_checked(model_path, model_schema);
  CommModel m;
  if (file.has("source")) {
    h5::Group src = file.group("source");
    m.source = read_provenance(src);
    m.source.fields.erase("file");  // the results path, kept apart from its provenance
    if (src.has_attr("file")) m.source_file = src.attr_string("file");
  }
  for_each_comm_group(file, [&](const h5::Group& g, const std::string& level, const std::string& bench,
                                const std::string& dtype) { m.fits.push_back(read_fit(g, level, bench, dtype)); });
  return m;
}

void CommModel::write(const std::string& model_path, const Provenance& fit_provenance) const {
  std::string tmp = model_path + ".tmp";
  {
    h5::File file(tmp, h5::File::Mode::create_truncate);
    write_meta(file, model_schema, fit_provenance);
    h5::Group src = file.create_group("source");
    src.set_attr("file", source_file);
    for (const auto& [k, v] : source.fields) src.set_attr(k, v);
    src.set_attr("ranks", static_cast<std::int64_t>(source.ranks));
    h5::Group env = src.create_group("environment");
    for (const auto& [k, v] : source.environment) env.set_attr(k, v);
    h5::Group comm = file.create_group("comm");
    for (const auto& f : fits)
      write_fit(comm.create_group(f.level).create_group(f.benchmark).create_group(f.dtype).create_group(rank_group(f.ranks)), f);
    file.flush();
  }
  std::error_code ec;
  std::filesystem::rename(tmp, model_path, ec);
  if (ec) throw Error(model_path + ": cannot rename " + tmp + " into place: " + ec.message());
}

const CommFit* CommModel::find(const std::string& benchmark, const std::string& level, const std::string& dtype,
                               int ranks) const {
  const CommFit* best = nullptr;
  for (const auto& f : fits) {
    if (f.benchmark != benchmark || f.level != level) continue;
    if (f.dtype != dtype && f.dtype != "byte") continue;
    if (!best || std::abs(f.ranks - ranks) < std::abs(best->ranks - ranks)) best = &f;
  }
  return best;
}

Prediction CommModel::predict(const std::string& benchmark, double bytes, int ranks, const std::string& level,
                              const std::string& dtype) const {
  const CommFit* f = find(benchmark, level, dtype, ranks);
  if (!f) {
    std::set<std::string> names;
    for (const auto& x : fits) names.insert(x.benchmark + "@" + x.level + "/" + x.dtype);
    std::string have;
    for (const auto& n : names) have += (have.empty() ? "" : ", ") + n;
    throw Error("no model for '" + benchmark + "' at level '" + level + "' with dtype '" + dtype +
                "' (the model has: " + have + ")");
  }
  Prediction p;
  p.from = f;
  const auto& segs = f->fit.segments;
  const Segment& s = segment_for(f->fit, bytes);
  p.segment = static_cast<std::size_t>(&s - segs.data());
  p.alpha_part = s.alpha;
  p.beta_part = s.beta * bytes;
  p.seconds = p.alpha_part + p.beta_part;
  // Interval: the bootstrap intervals of alpha and beta, widened by the segment's
  // typical relative residual (the scatter of single sizes about the line).
  double lo = s.alpha_ci.lo + s.beta_ci.lo * bytes, hi = s.alpha_ci.hi + s.beta_ci.hi * bytes;
  p.lo = std::min(lo, p.seconds * (1 - s.rms_rel_residual));
  p.hi = std::max(hi, p.seconds * (1 + s.rms_rel_residual));
  p.extrapolated_bytes = bytes < f->bytes_min || bytes > f->bytes_max;
  p.extrapolated_ranks = ranks != f->ranks;
  if (p.seconds > 0) p.busbw = bytes * f->data_bytes_per_byte / p.seconds * f->busbw_factor;
  if (p.extrapolated_ranks)
    p.note = "fitted at " + std::to_string(f->ranks) + " ranks only; the direct view does not scale with ranks";
  return p;
}

}  // namespace sextant::model
