#include "models/roofline.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <stdexcept>

#include "core/stats.hpp"
#include "models/segmentation.hpp"

namespace sextant::model {
namespace {

// Sum of squared deviations of y[i..j] from their mean.
double sse(const std::vector<double>& y, std::size_t i, std::size_t j) {
  double mean = 0;
  for (std::size_t k = i; k <= j; ++k) mean += y[k];
  mean /= static_cast<double>(j - i + 1);
  double s = 0;
  for (std::size_t k = i; k <= j; ++k) s += (y[k] - mean) * (y[k] - mean);
  return s;
}

// Nelder-Mead on a small dimension; enough for three parameters.
template <class F>
std::array<double, 3> nelder_mead(F f, std::array<double, 3> x0, double step) {
  constexpr int n = 3;
  std::array<std::array<double, 3>, n + 1> s;
  std::array<double, n + 1> v;
  for (int i = 0; i <= n; ++i) {
    s[i] = x0;
    if (i > 0) s[i][i - 1] += step;
    v[i] = f(s[i]);
  }
  for (int iter = 0; iter < 2000; ++iter) {
    std::array<int, n + 1> idx{0, 1, 2, 3};
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return v[a] < v[b]; });
    auto best = idx[0], worst = idx[n], second = idx[n - 1];
    if (std::fabs(v[worst] - v[best]) < 1e-14 * (1 + std::fabs(v[best]))) break;
    std::array<double, 3> c{};
    for (int i = 0; i <= n; ++i)
      if (i != worst)
        for (int d = 0; d < n; ++d) c[d] += s[i][d] / n;
    auto along = [&](double t) {
      std::array<double, 3> p;
      for (int d = 0; d < n; ++d) p[d] = c[d] + t * (s[worst][d] - c[d]);
      return p;
    };
    auto r = along(-1);
    double fr = f(r);
    if (fr < v[best]) {
      auto e = along(-2);
      double fe = f(e);
      if (fe < fr) s[worst] = e, v[worst] = fe;
      else s[worst] = r, v[worst] = fr;
    } else if (fr < v[second]) {
      s[worst] = r, v[worst] = fr;
    } else {
      auto k = along(0.5);
      double fk = f(k);
      if (fk < v[worst]) {
        s[worst] = k, v[worst] = fk;
      } else {
        for (int i = 0; i <= n; ++i)
          if (i != best) {
            for (int d = 0; d < n; ++d) s[i][d] = s[best][d] + 0.5 * (s[i][d] - s[best][d]);
            v[i] = f(s[i]);
          }
      }
    }
  }
  int best = 0;
  for (int i = 1; i <= n; ++i)
    if (v[i] < v[best]) best = i;
  return s[best];
}

// "L<n>", formatted: GCC 12 warns falsely (-Wrestrict) on "L" + std::to_string(n) here.
std::string cache_name(std::size_t n) {
  char name[24];
  std::snprintf(name, sizeof name, "L%zu", n);
  return name;
}

}  // namespace

std::vector<MemoryLevel> detect_memory_levels(std::span<const CurvePoint> curve, std::span<const double> cache_bytes,
                                              std::size_t max_levels, double min_step) {
  std::vector<CurvePoint> pts(curve.begin(), curve.end());
  std::erase_if(pts, [](const CurvePoint& p) { return !(p.bandwidth > 0) || !(p.bytes > 0); });
  std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  const std::size_t n = pts.size();
  if (n < 2) throw std::invalid_argument("memory levels need at least 2 sweep points");
  std::vector<double> y;
  for (const auto& p : pts) y.push_back(std::log(p.bandwidth));

  // Plateaus of log bandwidth, at least 2 points each; the mean square floored at 1e-4
  // (1% noise) so that exact data is not split on rounding.
  const auto plateau_cost = [&](std::size_t i, std::size_t j) { return sse(y, i, j - 1); };
  const Segmentation chosen = segment_series(
      n, plateau_cost,
      {.min_points = 2, .max_runs = max_levels, .params_per_run = 1, .min_mean_square = 1e-4, .min_gain_per_run = 0.5});
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for (std::size_t r = 0; r < chosen.runs(); ++r) spans.emplace_back(chosen.starts[r], chosen.starts[r + 1] - 1);
  std::vector<MemoryLevel> levels;
  for (auto [i, j] : spans) {
    std::vector<double> bw;
    for (std::size_t k = i; k <= j; ++k) bw.push_back(pts[k].bandwidth);
    MemoryLevel l{"", pts[i].bytes, pts[j].bytes, stats::median(bw), j - i + 1};
    // Neighbouring plateaus within min_step of each other are one level.
    if (!levels.empty() && std::fabs(std::log(l.bandwidth / levels.back().bandwidth)) < min_step) {
      auto& prev = levels.back();
      std::vector<double> all;
      for (std::size_t k = 0; k < n; ++k)
        if (pts[k].bytes >= prev.lo_bytes && pts[k].bytes <= l.hi_bytes) all.push_back(pts[k].bandwidth);
      prev.hi_bytes = l.hi_bytes;
      prev.bandwidth = stats::median(all);
      prev.points += l.points;
    } else {
      levels.push_back(l);
    }
  }
  // Names: the smallest cache that holds the plateau's first working set (where its
  // bandwidth starts), never a cache nearer the core than the previous plateau's (each
  // plateau is a level of its own: a sweep starting at the L1 size showed L1's
  // bandwidth from 48 KiB to 96 KiB, whose midpoint lies beyond L1, and named it L2 as
  // well as the next); DRAM once the plateau lies mostly beyond the last cache (a VM may
  // report the host's whole L3), or when the caches run out.
  std::size_t next_cache = 0;  // the nearest cache the next plateau may be named after
  bool dram = false;
  for (std::size_t k = 0; k < levels.size(); ++k) {
    auto& l = levels[k];
    std::size_t c = next_cache;
    while (c < cache_bytes.size() && l.lo_bytes > cache_bytes[c]) ++c;
    const bool beyond = !cache_bytes.empty() && std::sqrt(l.lo_bytes * l.hi_bytes) > cache_bytes.back();
    if (c < cache_bytes.size() && !beyond) {
      l.name = cache_name(c + 1);
      next_cache = c + 1;
    } else if (!cache_bytes.empty() && !dram) {
      l.name = "DRAM";
      dram = true;
      next_cache = cache_bytes.size();
    } else {
      l.name = "level " + std::to_string(k + 1);  // no caches known, or beyond DRAM
    }
  }
  return levels;
}

double Ceilings::bandwidth_for(double ws) const {
  if (memory.empty()) throw std::invalid_argument("no memory levels measured");
  const MemoryLevel* best = &memory.front();
  double best_d = std::numeric_limits<double>::infinity();
  for (const auto& l : memory) {
    if (ws >= l.lo_bytes && ws <= l.hi_bytes) return l.bandwidth;
    double d = std::min(std::fabs(std::log(ws / l.lo_bytes)), std::fabs(std::log(ws / l.hi_bytes)));
    if (d < best_d) {
      best_d = d;
      best = &l;
    }
  }
  return best->bandwidth;
}

double Ceilings::peak_for(const std::string& dtype) const {
  auto it = peak_flops.find(dtype);
  if (it == peak_flops.end()) throw std::invalid_argument("no peak FLOP/s measured for dtype '" + dtype + "'");
  return it->second;
}

double OperatorModel::predict(const Ceilings& c, double flops, double bytes) const {
  double compute = flops > 0 ? flops / (e_compute * c.peak_for(dtype)) : 0;
  double memory = bytes > 0 ? bytes / (e_memory * c.bandwidth_for(bytes)) : 0;
  return std::max(compute, memory) + t0;
}

std::string OperatorModel::bound(const Ceilings& c, double flops, double bytes) const {
  double compute = flops > 0 ? flops / (e_compute * c.peak_for(dtype)) : 0;
  double memory = bytes > 0 ? bytes / (e_memory * c.bandwidth_for(bytes)) : 0;
  return compute >= memory ? "compute" : "memory";
}

OperatorModel fit_operator(const Ceilings& c, std::span<const OperatorSample> samples) {
  if (samples.empty()) throw std::invalid_argument("no samples to fit an operator model");
  OperatorModel m;
  m.family = samples.front().family;
  m.dtype = samples.front().dtype;
  m.shapes = samples.size();
  // Parameters: logit e_c, logit e_m (efficiencies stay in (0, 1): above 1 a kernel
  // would beat its ceiling), log t0 (t0 > 0, tiny when not needed).
  auto efficiency = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  auto logit = [](double e) { return std::log(e / (1 - e)); };
  auto model_at = [&](const std::array<double, 3>& x, const OperatorSample& s) {
    OperatorModel t = m;
    t.e_compute = efficiency(x[0]);
    t.e_memory = efficiency(x[1]);
    t.t0 = std::exp(x[2]);
    return t.predict(c, s.flops, s.bytes);
  };
  auto loss = [&](const std::array<double, 3>& x) {
    double l = 0;
    for (const auto& s : samples) {
      double r = std::log(model_at(x, s) / s.seconds);
      l += r * r;
    }
    return l;
  };
  std::vector<double> tmin;
  for (const auto& s : samples) tmin.push_back(s.seconds);
  double t_small = *std::min_element(tmin.begin(), tmin.end());
  std::array<double, 3> best{};
  double best_loss = std::numeric_limits<double>::infinity();
  // A few starts: the loss has flat regions where one term never dominates.
  for (double ec : {0.5, 0.05})
    for (double em : {0.8, 0.2})
      for (double t0 : {t_small * 0.3, t_small * 1e-4}) {
        auto x = nelder_mead(loss, {logit(ec), logit(em), std::log(t0)}, 0.7);
        double l = loss(x);
        if (l < best_loss) {
          best_loss = l;
          best = x;
        }
      }
  m.e_compute = efficiency(best[0]);
  m.e_memory = efficiency(best[1]);
  m.t0 = std::exp(best[2]);
  // A term no sample has (an embedding lookup counts no FLOPs) leaves its efficiency
  // free: the simplex may wander along it until the logistic underflows to 0, which no
  // reader accepts. It is unused; 1 says so.
  if (std::none_of(samples.begin(), samples.end(), [](const OperatorSample& s) { return s.flops > 0; }))
    m.e_compute = 1;
  if (std::none_of(samples.begin(), samples.end(), [](const OperatorSample& s) { return s.bytes > 0; }))
    m.e_memory = 1;
  std::vector<double> errs;
  for (const auto& s : samples) errs.push_back(std::fabs(m.predict(c, s.flops, s.bytes) - s.seconds) / s.seconds);
  m.median_rel_error = stats::median(errs);
  return m;
}

std::vector<CeilingViolation> ceiling_violations(const Ceilings& c, std::span<const OperatorSample> samples,
                                                 double tolerance) {
  std::vector<CeilingViolation> out;
  for (const auto& s : samples) {
    if (!(s.seconds > 0)) continue;
    if (s.flops > 0 && c.peak_flops.count(s.dtype)) {
      double r = s.flops / s.seconds / c.peak_for(s.dtype);
      if (r > tolerance) out.push_back({&s, "compute", r});
    }
    if (s.bytes > 0 && !c.memory.empty()) {
      double top = 0;
      for (const auto& l : c.memory) top = std::max(top, l.bandwidth);
      double r = s.bytes / s.seconds / top;
      if (r > tolerance) out.push_back({&s, "memory", r});
    }
  }
  return out;
}

std::vector<std::string> raise_ceilings(Ceilings& c, std::span<const OperatorSample> samples) {
  std::map<std::string, const OperatorSample*> fastest_compute;
  const OperatorSample* fastest_memory = nullptr;
  auto flop_rate = [](const OperatorSample* s) { return s->flops / s->seconds; };
  auto byte_rate = [](const OperatorSample* s) { return s->bytes / s->seconds; };
  for (const auto& s : samples) {
    if (!(s.seconds > 0)) continue;
    auto& f = fastest_compute[s.dtype];
    if (s.flops > 0 && (!f || flop_rate(&s) > flop_rate(f))) f = &s;
    if (s.bytes > 0 && (!fastest_memory || byte_rate(&s) > byte_rate(fastest_memory))) fastest_memory = &s;
  }
  std::vector<std::string> raised;
  auto say = [&](const std::string& ceiling, double from, double to, const char* unit, const OperatorSample& s) {
    char line[256];
    std::snprintf(line, sizeof line, "%s: %.3g -> %.3g %s (%s %s %s)", ceiling.c_str(), from, to, unit,
                  s.family.c_str(), s.dtype.c_str(), s.shape.c_str());
    raised.push_back(line);
  };
  for (const auto& [dtype, s] : fastest_compute) {
    auto it = c.peak_flops.find(dtype);
    if (!s || it == c.peak_flops.end() || flop_rate(s) <= it->second) continue;
    say("peak_flops " + dtype, it->second / 1e9, flop_rate(s) / 1e9, "GFLOP/s", *s);
    it->second = flop_rate(s);
  }
  if (fastest_memory && !c.memory.empty()) {
    auto top = std::max_element(c.memory.begin(), c.memory.end(),
                                [](const MemoryLevel& a, const MemoryLevel& b) { return a.bandwidth < b.bandwidth; });
    if (byte_rate(fastest_memory) > top->bandwidth) {
      say("bandwidth " + top->name, top->bandwidth / 1e9, byte_rate(fastest_memory) / 1e9, "GB/s", *fastest_memory);
      top->bandwidth = byte_rate(fastest_memory);
    }
  }
  return raised;
}

}  // namespace sextant::model
