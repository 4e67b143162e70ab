#include "models/comm_model.hpp"
#include "models/model_file.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>

#include "core/error.hpp"
#include "core/h5.hpp"
#include "core/units.hpp"

namespace sextant::model {
namespace {

// The (group, level, benchmark, dtype) visitor the readers below are written against.
template <class Fn>
void for_each_comm_group(const h5::Group& root, const std::string& top, Fn fn) {
  for_each_rank_group(root, top, [&](const RankGroup& g) { fn(g.group, g.level, g.benchmark, g.dtype); });
}

void write_fit(h5::Group g, const CommFit& f) {
  g.set_attr("view", to_string(View::direct));  // a CommFit is the direct view's
  g.set_attr("ranks", std::int64_t{f.ranks});
  g.set_attr("oversubscribed", std::int64_t{f.oversubscribed});
  g.set_attr("busbw_factor", f.busbw_factor);
  g.set_attr("data_bytes_per_byte", f.data_bytes_per_byte);
  g.set_attr("size_unit", to_string(f.size_unit));
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

// What the comm part may hold is checked where it is read (require_value).
bool finite_nonnegative(double x) { return std::isfinite(x) && x >= 0; }
// The group p<N> holds the fits for N ranks: its `ranks` attribute must say the same.
void require_ranks(const h5::Group& g, long long ranks) {
  require_value(ranks >= 1, g, "ranks " + std::to_string(ranks) + " (must be >= 1)");
  const std::string& path = g.path();
  const std::string leaf = path.substr(path.rfind('/') + 1);
  require_value(leaf == rank_group(ranks), g, "ranks attribute " + std::to_string(ranks) + " contradicts the group name");
}

CommFit read_fit(const h5::Group& g, const std::string& level, const std::string& bench, const std::string& dtype) {
  CommFit f;
  f.benchmark = bench;
  f.level = level;
  f.dtype = dtype;
  f.ranks = static_cast<int>(g.attr_int("ranks"));
  f.oversubscribed = g.attr_int("oversubscribed") != 0;
  f.busbw_factor = g.attr_double("busbw_factor");
  f.data_bytes_per_byte = g.attr_double("data_bytes_per_byte");
  f.size_unit = read_size_unit(g);
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
  require_ranks(g, f.ranks);
  require_value(finite_nonnegative(f.busbw_factor), g, "busbw_factor " + format_value(f.busbw_factor));
  require_value(std::isfinite(f.data_bytes_per_byte) && f.data_bytes_per_byte > 0, g,
          "data_bytes_per_byte " + format_value(f.data_bytes_per_byte));
  require_value(finite_nonnegative(f.bytes_min) && std::isfinite(f.bytes_max) && f.bytes_min <= f.bytes_max, g,
          "fitted range " + format_value(f.bytes_min) + " .. " + format_value(f.bytes_max) + " bytes");
  for (std::size_t i = 0; i < lo.size(); ++i) {
    const std::string seg = "segment " + std::to_string(i) + ": ";
    require_value(finite_nonnegative(lo[i]) && std::isfinite(hi[i]) && lo[i] <= hi[i] && (i == 0 || lo[i] >= hi[i - 1]), g,
            seg + "sizes " + format_value(lo[i]) + " .. " + format_value(hi[i]) + " (must be ascending, not overlapping)");
    require_value(finite_nonnegative(a[i]), g, seg + "alpha " + format_value(a[i]) + " s (must be finite, >= 0)");
    require_value(finite_nonnegative(b[i]), g, seg + "beta " + format_value(b[i]) + " s/B (must be finite, >= 0)");
    require_value(a[i] + b[i] * hi[i] > 0, g, seg + "alpha and beta both 0: no time at all");
    f.fit.segments.push_back({lo[i], hi[i], a[i], b[i], {alo[i], ahi[i]}, {blo[i], bhi[i]}, r2[i], rms[i],
                              static_cast<std::size_t>(pts[i])});
  }
  return f;
}

void write_algorithm_fit(h5::Group g, const AlgorithmFit& a) {
  g.set_attr("view", to_string(View::algorithm));
  g.set_attr("ranks", std::int64_t{a.ranks});
  g.set_attr("size_unit", to_string(a.size_unit));
  g.set_attr("gamma", a.gamma);
  g.set_attr("link", "pingpong");
  g.set_attr("link_ranks", std::int64_t{a.link_ranks});
  g.set_attr("selection", a.selection);
  std::vector<double> lo, hi, cal, err;
  std::vector<std::string> names, ties;
  for (const auto& r : a.ranges) {
    std::string t;
    for (const auto& x : r.indistinguishable) t += (t.empty() ? "" : ",") + x;
    ties.push_back(t);
    lo.push_back(r.lo_bytes);
    hi.push_back(r.hi_bytes);
    cal.push_back(r.calibration);
    err.push_back(r.median_abs_error);
    names.push_back(r.algorithm);
  }
  g.write("lo_bytes", lo);
  g.write("hi_bytes", hi);
  g.write("algorithm", names);
  g.write("calibration", cal);
  g.write("median_abs_error", err);
  g.write("indistinguishable", ties);
}

AlgorithmFit read_algorithm_fit(const h5::Group& g, const std::string& level, const std::string& bench,
                                const std::string& dtype) {
  AlgorithmFit a;
  a.benchmark = bench;
  a.level = level;
  a.dtype = dtype;
  a.ranks = static_cast<int>(g.attr_int("ranks"));
  a.size_unit = read_size_unit(g);
  a.gamma = g.attr_double("gamma");
  a.link_ranks = static_cast<int>(g.attr_int("link_ranks"));
  if (g.has_attr("selection")) a.selection = g.attr_string("selection");  // files before it: inferred
  require_value(a.selection == "inferred" || a.selection == "measured" || a.selection == "forced", g,
                "selection '" + a.selection + "' (inferred, measured or forced)");
  auto lo = g.dataset("lo_bytes").read_doubles(), hi = g.dataset("hi_bytes").read_doubles();
  auto cal = g.dataset("calibration").read_doubles(), err = g.dataset("median_abs_error").read_doubles();
  auto names = g.dataset("algorithm").read_strings();
  auto ties = g.dataset("indistinguishable").read_strings();
  if (hi.size() != lo.size() || cal.size() != lo.size() || err.size() != lo.size() || names.size() != lo.size() ||
      ties.size() != lo.size())
    throw Error(g.where() + ": range datasets differ in length");
  require_ranks(g, a.ranks);
  require_value(a.link_ranks >= 1, g, "link_ranks " + std::to_string(a.link_ranks));
  require_value(finite_nonnegative(a.gamma), g, "gamma " + format_value(a.gamma) + " s/B (must be finite, >= 0)");
  for (std::size_t i = 0; i < lo.size(); ++i) {
    require_value(std::isfinite(cal[i]) && cal[i] > 0, g, "range " + std::to_string(i) + ": calibration " + format_value(cal[i]));
    require_value(finite_nonnegative(lo[i]) && std::isfinite(hi[i]) && lo[i] <= hi[i], g,
            "range " + std::to_string(i) + ": sizes " + format_value(lo[i]) + " .. " + format_value(hi[i]));
    if (!find_algorithm(base_op(bench), names[i]))
      throw Error(g.where() + ": unknown algorithm '" + names[i] + "' for " + bench);
    a.ranges.push_back({lo[i], hi[i], names[i], cal[i], err[i], split_list(ties[i])});
  }
  return a;
}

// The benchmark a forced run forced its algorithm on ("allreduce@ring~isolated" ->
// "allreduce~isolated"): the run whose choice it measures.
std::string unforced(const std::string& b) {
  const std::string plain = b.substr(0, b.find('@'));
  return is_isolated_form(b) && plain != b ? isolated_form(plain) : plain;
}

// Is rank count a nearer to want than b? Ties go to the smaller count.
bool nearer(int a, int b, int want) {
  int da = std::abs(a - want), db = std::abs(b - want);
  return da < db || (da == db && a < b);
}

// The range that covers bytes, else the nearest on a log scale.
const AlgorithmRange& range_for(const AlgorithmFit& a, double bytes) {
  const AlgorithmRange* best = &a.ranges.front();
  double best_d = std::numeric_limits<double>::infinity();
  for (const auto& r : a.ranges) {
    if (bytes >= r.lo_bytes && bytes <= r.hi_bytes) return r;
    double d = std::min(std::fabs(std::log1p(bytes) - std::log1p(r.lo_bytes)),
                        std::fabs(std::log1p(bytes) - std::log1p(r.hi_bytes)));
    if (d < best_d) {
      best_d = d;
      best = &r;
    }
  }
  return *best;
}

}  // namespace

const char* to_string(View view) { return view == View::algorithm ? "algorithm" : "direct"; }

std::vector<MeasuredGroup> read_comm_results(const std::string& results_path) {
  h5::File file = open_checked(results_path, results_schema);
  std::vector<MeasuredGroup> groups;
  for_each_comm_group(file, "comm", [&](const h5::Group& g, const std::string& level, const std::string& bench,
                                        const std::string& dtype) {
    auto bytes = g.dataset("bytes").read_doubles();
    auto median = g.dataset("median").read_floats();
    auto data_bytes = g.dataset("data_bytes").read_doubles();
    auto valid = g.dataset("valid").read_doubles();
    // The median's 95% CI, as a standard error (CI half-width / 1.96), when stored.
    std::vector<double> ci_lo, ci_hi;
    if (g.has("ci_lo") && g.has("ci_hi")) ci_lo = g.dataset("ci_lo").read_doubles(), ci_hi = g.dataset("ci_hi").read_doubles();
    if (median.size() != bytes.size() || data_bytes.size() != bytes.size() || valid.size() != bytes.size())
      throw Error(g.where() + ": datasets bytes, median, data_bytes and valid differ in length");
    require_ranks(g, g.attr_int("ranks"));
    std::vector<std::string> reasons;
    if (g.has("unmeasured")) reasons = g.dataset("unmeasured").read_strings();
    // A size is missing where no repetition was valid, or where the run said why it could
    // not measure it (window mode: too few starts on time for a median; `valid` still
    // counts those that were). Its median is NaN then; a measured one has a time.
    const auto missing = [&](std::size_t i) { return valid[i] < 1 || (i < reasons.size() && !reasons[i].empty()); };
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      const std::string at = "size " + std::to_string(i) + " (" + format_value(bytes[i]) + " bytes): ";
      require_value(finite_nonnegative(bytes[i]) && (i == 0 || bytes[i] > bytes[i - 1]), g,
                    at + "sizes must be finite and ascend");
      require_value(finite_nonnegative(valid[i]), g, at + "valid " + format_value(valid[i]));
      require_value(missing(i) || (std::isfinite(median[i]) && median[i] > 0), g,
                    at + "median " + format_value(median[i]) + " s from " + format_value(valid[i]) +
                        " valid repetitions (a measured time is finite and > 0)");
    }
    MeasuredGroup m;
    m.where = g.where();
    m.benchmark = bench;
    m.level = level;
    m.dtype = dtype;
    m.size_unit = read_size_unit(g);
    m.ranks = static_cast<int>(g.attr_int("ranks"));
    m.oversubscribed = g.attr_int("oversubscribed") != 0;
    m.busbw_factor = g.attr_double("busbw_factor");
    require_value(finite_nonnegative(m.busbw_factor), g, "busbw_factor " + format_value(m.busbw_factor));
    // Bandwidth benchmarks time a window of messages: model one message of the stream.
    double window = g.has_attr("window") ? std::max<double>(1, static_cast<double>(g.attr_int("window"))) : 1;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      if (missing(i)) {
        if (m.unmeasured++ == 0)
          m.unmeasured_reason = i < reasons.size() && !reasons[i].empty() ? reasons[i] : "no valid repetition";
        continue;
      }
      const double rel_sigma =
          ci_lo.size() == bytes.size() && ci_hi.size() == bytes.size() ? (ci_hi[i] - ci_lo[i]) / (2 * 1.96 * median[i]) : 0;
      m.points.push_back({bytes[i], data_bytes[i] / window, median[i] / window, std::max(rel_sigma, 0.0)});
      if (bytes[i] > 0) m.data_bytes_per_byte = data_bytes[i] / bytes[i] / window;
    }
    groups.push_back(std::move(m));
  });
  return groups;
}

CommModel CommModel::fit_results(const std::string& results_path, const FitOptions& options) {
  CommModel m;
  std::vector<std::vector<Measured>> measured;  // per fit, for the algorithm view
  for (auto& g : read_comm_results(results_path)) {
    if (g.unmeasured)
      std::fprintf(stderr, "sextant fit: WARNING: %s: %zu sizes not measured, left out (%s)\n", g.where.c_str(),
                   g.unmeasured, g.unmeasured_reason.c_str());
    if (g.points.size() < options.min_points()) {
      std::fprintf(stderr, "sextant fit: %s: %zu usable sizes, too few to fit: skipped\n", g.where.c_str(),
                   g.points.size());
      continue;
    }
    CommFit f;
    f.benchmark = g.benchmark;
    f.level = g.level;
    f.dtype = g.dtype;
    f.size_unit = g.size_unit;
    f.ranks = g.ranks;
    f.oversubscribed = g.oversubscribed;
    f.busbw_factor = g.busbw_factor;
    f.data_bytes_per_byte = g.data_bytes_per_byte;
    f.fit = fit_piecewise(g.hockney_points(), options);
    f.bytes_min = g.points.front().bytes;
    f.bytes_max = g.points.back().bytes;
    measured.push_back(std::move(g.points));
    m.fits.push_back(std::move(f));
  }
  if (m.fits.empty()) throw Error(results_path + ": no communication benchmark with enough sizes to fit");

  for (const auto& f : m.fits) {
    if (f.benchmark != "bandwidth") continue;
    const CommFit* ping = m.link(f.level);
    if (!ping) continue;
    m.loggp.push_back({f.level, f.ranks, ping->fit.segments.front().alpha, f.fit.segments.front().alpha,
                       f.fit.segments.back().beta});
  }

  // View (b): every collective explained by the algorithms' costs on the pt2pt link;
  // where the run forced the library's algorithms, which one it chose is measured.
  for (std::size_t k = 0; k < m.fits.size(); ++k) {
    const CommFit& f = m.fits[k];
    const CommFit* link = m.link(f.level);
    if (!link || algorithms_for(base_op(f.benchmark)).empty()) continue;
    const std::string_view forced_name = forced_algorithm(f.benchmark);
    const CollectiveAlgorithm* forced_formula = find_library_algorithm(base_op(f.benchmark), forced_name);
    if (!forced_name.empty() && !forced_formula) continue;  // an algorithm without a cost formula
    if (forced_formula && !forced_formula->runs(f.ranks)) continue;  // the library ran its own choice
    std::vector<ForcedRun> forced;
    if (!forced_name.empty()) {
      forced.push_back({forced_formula, measured[k]});
    } else {
      for (std::size_t j = 0; j < m.fits.size(); ++j) {
        const CommFit& g = m.fits[j];
        if (j == k || g.level != f.level || g.dtype != f.dtype || g.ranks != f.ranks ||
            forced_algorithm(g.benchmark).empty() || unforced(g.benchmark) != f.benchmark)
          continue;
        if (const auto* formula = find_library_algorithm(base_op(g.benchmark), forced_algorithm(g.benchmark)))
          if (formula->runs(f.ranks)) forced.push_back({formula, measured[j]});
      }
    }
    AlgorithmFit a;
    a.benchmark = f.benchmark;
    a.level = f.level;
    a.dtype = f.dtype;
    a.ranks = f.ranks;
    a.size_unit = f.size_unit;
    a.link_ranks = link->ranks;
    for (const auto& g : m.fits)  // gamma: MPI_Reduce_local's time per byte, same dtype
      if (g.benchmark == "reduce_local" && g.level == f.level && g.dtype == f.dtype)
        a.gamma = g.fit.segments.back().beta;
    const Link on_link{&link->fit, a.gamma};
    if (forced.empty()) {
      a.ranges = identify_algorithms(base_op(f.benchmark), on_link, f.ranks, measured[k]);
    } else {
      a.selection = forced_name.empty() ? "measured" : "forced";
      a.ranges = identify_by_forcing(on_link, f.ranks, measured[k], forced);
    }
    if (!a.ranges.empty()) m.algorithms.push_back(std::move(a));
  }
  return m;
}

CommModel CommModel::read(const h5::Group& file) {
  CommModel m;
  for_each_comm_group(file, "comm", [&](const h5::Group& g, const std::string& level, const std::string& bench,
                                        const std::string& dtype) { m.fits.push_back(read_fit(g, level, bench, dtype)); });
  if (file.has("comm_loggp")) {
    h5::Group lg = file.group("comm_loggp");
    for (const auto& level : lg.children()) {
      h5::Group g = lg.group(level);
      m.loggp.push_back({level, static_cast<int>(g.attr_int("ranks")), g.attr_double("L_plus_2o"),
                         g.attr_double("g"), g.attr_double("G")});
      const auto& l = m.loggp.back();
      require_value(l.ranks >= 1 && finite_nonnegative(l.L_plus_2o) && finite_nonnegative(l.g) && finite_nonnegative(l.G), g,
              "LogGP parameters must be finite and >= 0 (ranks >= 1)");
    }
  }
  for_each_comm_group(file, "comm_algorithms", [&](const h5::Group& g, const std::string& level,
                                                   const std::string& bench, const std::string& dtype) {
    m.algorithms.push_back(read_algorithm_fit(g, level, bench, dtype));
  });
  return m;
}

void CommModel::write_into(h5::Group& root) const {
  h5::Group comm = root.create_group("comm");
  for (const auto& f : fits)
    write_fit(comm.create_group(f.level).create_group(f.benchmark).create_group(f.dtype).create_group(rank_group(f.ranks)), f);
  h5::Group lg = root.create_group("comm_loggp");
  for (const auto& l : loggp) {
    h5::Group g = lg.create_group(l.level);
    g.set_attr("ranks", std::int64_t{l.ranks});
    g.set_attr("L_plus_2o", l.L_plus_2o);
    g.set_attr("g", l.g);
    g.set_attr("G", l.G);
    g.set_attr("note", "L+2o from pingpong alpha; g, G from the bandwidth stream's first alpha and last beta");
  }
  h5::Group algs = root.create_group("comm_algorithms");
  for (const auto& a : algorithms)
    write_algorithm_fit(
        algs.create_group(a.level).create_group(a.benchmark).create_group(a.dtype).create_group(rank_group(a.ranks)), a);
}

const CommFit* CommModel::find(const std::string& benchmark, const std::string& level, const std::string& dtype,
                               int ranks) const {
  const CommFit* best = nullptr;
  for (const auto& f : fits) {
    if (f.benchmark != benchmark || f.level != level) continue;
    if (f.dtype != dtype && f.dtype != "byte") continue;
    if (!best || nearer(f.ranks, best->ranks, ranks)) best = &f;
  }
  return best;
}

std::vector<int> CommModel::fitted_ranks(const std::string& benchmark, const std::string& level,
                                         const std::string& dtype) const {
  std::set<int> r;
  for (const auto& f : fits)
    if (f.benchmark == benchmark && f.level == level && (f.dtype == dtype || f.dtype == "byte")) r.insert(f.ranks);
  return {r.begin(), r.end()};
}

const CommFit* CommModel::link(const std::string& level) const {
  const CommFit* best = nullptr;  // the smallest rank count: a pair, as Hockney means
  for (const auto& f : fits)
    if (f.benchmark == "pingpong" && f.level == level && (!best || f.ranks < best->ranks)) best = &f;
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
  const CollectiveAlgorithm* forced = find_library_algorithm(base_op(benchmark), forced_algorithm(benchmark));
  if (forced && !forced->runs(ranks) && find(unforced(benchmark), level, dtype, ranks)) {
    // Asked for an algorithm it does not run at this p, the library runs its own choice.
    Prediction own = predict(unforced(benchmark), bytes, ranks, level, dtype);
    own.note = std::string(forced->name) + " does not run at " + std::to_string(ranks) +
               " ranks: the library runs its own choice there. " + own.note;
    return own;
  }
  Prediction p;
  // The algorithm view from the fitted rank count nearest to `ranks` on the same side of
  // the powers of two where there is one: libraries choose (and fold their algorithms)
  // by whether p is a power of two, so p = 3 tells more about 5..7 than p = 4 does.
  const AlgorithmFit* algo = nullptr;
  auto same_kind = [&](int q) { return std::has_single_bit(static_cast<unsigned>(q)) == std::has_single_bit(static_cast<unsigned>(ranks)); };
  for (const auto& a : algorithms)
    if (a.benchmark == benchmark && a.level == level && a.dtype == f->dtype &&
        (!algo || (same_kind(a.ranks) && !same_kind(algo->ranks)) ||
         (same_kind(a.ranks) == same_kind(algo->ranks) && nearer(a.ranks, algo->ranks, ranks))))
      algo = &a;
  const CommFit* pt2pt = link(level);

  if (f->ranks != ranks && algo && pt2pt) {
    // View (b) at another rank count: the algorithm the library ran for this size at
    // the fitted p, costed on the pt2pt link at `ranks`, times the measured/derived
    // ratio of that size range (what topology and contention added at the fitted p).
    const AlgorithmRange& r = range_for(*algo, bytes);
    const CollectiveAlgorithm* alg = find_algorithm(base_op(benchmark), r.algorithm);
    double n = bytes * (algo->size_unit == SizeUnit::per_rank_block ? ranks : 1);
    const Link link{&pt2pt->fit, algo->gamma};
    CostTerms c = alg->cost(link, n, ranks);
    // Algorithms the fitted p could not tell apart (at p = 2 ring, recursive doubling
    // and Bruck all take one step) part ways at other p: the library is taken to run
    // the cheapest of them there, as MPI libraries choose by cost (allgather at 4
    // namespace hosts: ring said 3 latencies, +33%; recursive doubling 2). One it does
    // not run at this p is replaced by the cheapest it does.
    // An indistinguishable one was measured as fast as the chosen one at the fitted p, so
    // its calibration is measured / its own formula there (the formulas can differ where
    // the library ran something else when asked: MPICH's Rabenseifner allreduce of fewer
    // elements than the power of two is recursive doubling, 0.52 of its formula at 8 B).
    const CollectiveAlgorithm* const fitted_alg = alg;
    const double n_fitted = bytes * (algo->size_unit == SizeUnit::per_rank_block ? algo->ranks : 1);
    auto calibration_of = [&](const CollectiveAlgorithm* a) {
      const double own = a->cost(link, n_fitted, algo->ranks).total();
      return own > 0 ? r.calibration * fitted_alg->cost(link, n_fitted, algo->ranks).total() / own : r.calibration;
    };
    double calibration = r.calibration;
    std::vector<const CollectiveAlgorithm*> others;
    for (const auto& name : r.indistinguishable)
      if (const CollectiveAlgorithm* other = find_algorithm(base_op(benchmark), name)) others.push_back(other);
    for (const CollectiveAlgorithm* other : others)
      if (other->runs(ranks) && other->runs(algo->ranks))
        if (CostTerms oc = other->cost(link, n, ranks); oc.total() * calibration_of(other) < c.total() * calibration)
          alg = other, c = oc, calibration = calibration_of(other);
    if (!alg->runs(ranks)) {
      // Not run at this p: the cheapest the library does run here, on the range's link
      // calibration (the fitted p measured another algorithm).
      alg = nullptr;
      for (const CollectiveAlgorithm* other : algorithms_for(base_op(benchmark)))
        if (other->runs(ranks))
          if (CostTerms oc = other->cost(link, n, ranks); !alg || oc.total() < c.total()) alg = other, c = oc;
      calibration = r.calibration;
    }
    p.view = View::algorithm;
    p.algorithm = std::string(alg->name);
    p.calibration = calibration;
    p.algorithm_fit = algo;
    p.from = pt2pt;
    p.alpha_part = c.alpha_part * calibration;
    p.beta_part = c.beta_part * calibration;
    p.gamma_part = c.gamma_part * calibration;
    p.seconds = c.total() * calibration;
    double spread = std::max(r.median_abs_error, pt2pt->fit.segments.back().rms_rel_residual);
    p.lo = p.seconds / (1 + spread);
    p.hi = p.seconds * (1 + spread);
    p.extrapolated_ranks = true;
    p.extrapolated_bytes = bytes < algo->ranges.front().lo_bytes || bytes > algo->ranges.back().hi_bytes;
    const char* how = algo->selection == "measured" ? " the library's choice (each of its algorithms forced) at "
                      : algo->selection == "forced" ? " forced at "
                                                      : " identified at ";
    p.note = "algorithm view: " + p.algorithm + how + std::to_string(algo->ranks) +
             " ranks" + (p.algorithm != r.algorithm ? " (indistinguishable there from " + r.algorithm + ", cheaper here)" : "") +
             ", costed at " + std::to_string(ranks) + " on the pingpong link";
    if (p.seconds > 0) p.busbw = n / p.seconds * busbw_factor(base_op(benchmark), ranks);
    return p;
  }

  p.view = View::direct;
  p.from = f;
  const auto& segs = f->fit.segments;
  const PiecewiseTerms terms = predict_terms(f->fit, bytes);
  const Segment& s = segs[terms.segment];
  p.segment = terms.segment;
  p.alpha_part = terms.alpha_part;
  p.beta_part = terms.beta_part;
  p.seconds = p.alpha_part + p.beta_part;
  // Interval: the bootstrap intervals of alpha and beta, widened by the segment's
  // typical relative residual (the scatter of single sizes about the line). In a gap
  // between fitted ranges, also everything between the two segments' lines there.
  double lo = s.alpha_ci.lo + s.beta_ci.lo * bytes, hi = s.alpha_ci.hi + s.beta_ci.hi * bytes;
  p.lo = std::min(lo, p.seconds * (1 - s.rms_rel_residual));
  p.hi = std::max(hi, p.seconds * (1 + s.rms_rel_residual));
  if (terms.bridged) {
    p.bridged = true;
    for (std::size_t i : {terms.left, terms.right}) {
      const double line = segs[i].alpha + segs[i].beta * bytes;
      p.lo = std::min(p.lo, line);
      p.hi = std::max(p.hi, line);
    }
  }
  p.extrapolated_bytes = bytes < f->bytes_min || bytes > f->bytes_max;
  p.extrapolated_ranks = ranks != f->ranks;
  if (p.seconds > 0) p.busbw = bytes * f->data_bytes_per_byte / p.seconds * f->busbw_factor;
  if (p.extrapolated_ranks)
    p.note = "fitted at " + std::to_string(f->ranks) + " ranks only, and no algorithm view for " + benchmark +
             ": the direct view does not scale with ranks";
  return p;
}

std::vector<HoldoutRow> holdout_check(const std::string& results_path, double split_bytes,
                                      const FitOptions& options) {
  std::vector<HoldoutRow> rows;
  for (const auto& g : read_comm_results(results_path)) {
    std::vector<Point> train, test;
    auto all = g.hockney_points();
    // Every other size, and always the largest: the held-out sizes lie inside the fitted
    // range, so this measures the model between sizes it saw (beyond them a prediction
    // extrapolates, and says so).
    for (std::size_t i = 0; i < all.size(); ++i)
      (i % 2 == 0 || i + 1 == all.size() ? train : test).push_back(all[i]);
    if (train.size() < options.min_points() || test.empty()) continue;
    PiecewiseFit fit = fit_piecewise(train, options);
    HoldoutRow r{g.benchmark, g.level, g.dtype, g.ranks};
    for (const auto& t : test) {
      double err = std::fabs(predict(fit, t.bytes) - t.seconds) / t.seconds * 100;
      if (t.bytes < split_bytes) {
        r.small_mape += err;
        ++r.small_n;
      } else {
        r.large_mape += err;
        ++r.large_n;
      }
    }
    if (r.small_n) r.small_mape /= static_cast<double>(r.small_n);
    if (r.large_n) r.large_mape /= static_cast<double>(r.large_n);
    rows.push_back(r);
  }
  return rows;
}

}  // namespace sextant::model
