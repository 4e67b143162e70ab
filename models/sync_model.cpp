#include "models/sync_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "core/error.hpp"
#include "core/schema.hpp"

namespace sextant::model {
namespace {

SyncModel read_sync(const h5::Group& g) {
  SyncModel m;
  m.ranks = static_cast<int>(g.attr_int("ranks"));
  m.interval_s = g.dataset("interval_seconds").read_doubles();
  m.excess = g.dataset("excess").read_doubles();
  require_value(m.ranks >= 2, g, "ranks " + std::to_string(m.ranks) + " (a synchronisation needs 2 or more)");
  require_value(!m.interval_s.empty() && m.interval_s.size() == m.excess.size(), g,
                "interval_seconds and excess differ in length or are empty");
  for (std::size_t i = 0; i < m.interval_s.size(); ++i) {
    require_value(std::isfinite(m.interval_s[i]) && m.interval_s[i] > 0 && (i == 0 || m.interval_s[i] > m.interval_s[i - 1]),
                  g, "interval " + format_value(m.interval_s[i]) + " s (finite, > 0, ascending)");
    require_value(std::isfinite(m.excess[i]) && m.excess[i] >= 0, g,
                  "excess " + format_value(m.excess[i]) + " (a share, finite and >= 0)");
  }
  if (g.has("message_bytes")) {
    m.message_bytes = g.dataset("message_bytes").read_doubles();
    m.message_overhead = g.dataset("message_overhead_seconds").read_doubles();
    require_value(m.message_bytes.size() == m.message_overhead.size(), g,
                  "message_bytes and message_overhead_seconds differ in length");
    for (std::size_t i = 0; i < m.message_bytes.size(); ++i) {
      require_value(std::isfinite(m.message_bytes[i]) && m.message_bytes[i] > 0 &&
                        (i == 0 || m.message_bytes[i] > m.message_bytes[i - 1]),
                    g, "message size " + format_value(m.message_bytes[i]) + " bytes (finite, > 0, ascending)");
      // A difference of two measured times: slightly negative where a message costs nothing.
      require_value(std::isfinite(m.message_overhead[i]), g,
                    "message overhead " + format_value(m.message_overhead[i]) + " s (finite)");
    }
  }
  return m;
}

// ys at x between the ascending xs, `position(lo, x, hi)` saying how far x lies from lo
// toward hi; the nearest end's value outside them.
template <class Position>
double piecewise(const std::vector<double>& xs, const std::vector<double>& ys, double x, Position position) {
  if (x <= xs.front()) return ys.front();
  for (std::size_t i = 1; i < xs.size(); ++i)
    if (x <= xs[i]) return ys[i - 1] + position(xs[i - 1], x, xs[i]) * (ys[i] - ys[i - 1]);
  return ys.back();
}

}  // namespace

double expected_normal_maximum(int n) {
  if (n < 2) return 0;
  // Every collective of a step asks: computed once per n.
  static std::mutex lock;
  static std::map<int, double> known;
  std::lock_guard<std::mutex> hold(lock);
  if (auto at = known.find(n); at != known.end()) return at->second;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1) dx, by the trapezoid rule on [-10, 10]
  // (the integrand is below 1e-20 outside it for any n a group can have).
  const double h = 1e-3, pi = std::acos(-1.0);
  double sum = 0;
  for (double x = -10; x <= 10; x += h) {
    const double phi = std::exp(-x * x / 2) / std::sqrt(2 * pi), cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    sum += x * n * phi * std::pow(cdf, n - 1);
  }
  return known[n] = sum * h;
}

double SyncModel::wait(double interval, int group_ranks) const {
  if (group_ranks < 2 || !(interval > 0) || interval_s.empty()) return 0;
  const double share = piecewise(interval_s, excess, interval,
                                 [](double lo, double x, double hi) { return std::log(x / lo) / std::log(hi / lo); });
  return share * interval * expected_normal_maximum(group_ranks) / expected_normal_maximum(ranks);
}

double SyncModel::overhead(double bytes) const {
  if (message_bytes.empty() || !(bytes > 0)) return 0;
  const double o = piecewise(message_bytes, message_overhead, bytes,
                             [](double lo, double x, double hi) { return (x - lo) / (hi - lo); });
  return std::max(o, 0.0);
}

std::optional<SyncModel> SyncModel::fit_results(const std::string& results_path) {
  h5::File file = open_checked(results_path, results_schema);
  if (!file.has("sync")) return std::nullopt;
  return read_sync(file.group("sync"));
}

SyncModel SyncModel::read(const h5::Group& root) { return read_sync(root.group("sync")); }

void SyncModel::write_into(h5::Group& root) const {
  h5::Group g = root.create_group("sync");
  g.set_attr("ranks", std::int64_t{ranks});
  g.set_attr("model", "wait = excess(T) * T * E[max of p normals] / E[max of ranks normals], T the work since the "
                      "group's previous synchronisation");
  g.write("interval_seconds", interval_s);
  g.write("excess", excess);
  if (!message_bytes.empty()) {
    g.set_attr("message_model", "overhead(n): linear between the measured sizes, the nearest outside, at least 0; "
                                "charged to a pipeline stage's compute per message it sends or receives");
    g.write("message_bytes", message_bytes);
    g.write("message_overhead_seconds", message_overhead);
  }
}

}  // namespace sextant::model
