#include "models/collectives.hpp"

#include <algorithm>
#include <cmath>

#include "core/stats.hpp"

namespace sextant::model {
namespace {

double lg(int p) { return p > 1 ? std::log2(static_cast<double>(p)) : 0.0; }
int ceil_lg(int p) { return p > 1 ? static_cast<int>(std::ceil(std::log2(static_cast<double>(p)))) : 0; }
bool power_of_two(int p) { return p > 0 && (p & (p - 1)) == 0; }
double frac(int p) { return p > 0 ? double(p - 1) / p : 0.0; }

void reduce_bytes(const Link& l, CostTerms& c, double bytes) { c.gamma_part += l.gamma * bytes; }

// --- allreduce
CostTerms allreduce_recursive_doubling(const Link& l, double n, int p) {
  CostTerms c;
  int steps = static_cast<int>(std::floor(lg(p)));
  // Non-powers of two: MPICH folds the extra ranks in before and out after (2 more steps).
  if (!power_of_two(p)) steps += 2;
  l.step(c, n, steps);
  reduce_bytes(l, c, n * std::floor(lg(p)) + (power_of_two(p) ? 0 : n));
  return c;
}
CostTerms allreduce_rabenseifner(const Link& l, double n, int p) {
  CostTerms c;
  int k = static_cast<int>(std::floor(lg(p)));
  for (int s = 1; s <= k; ++s) l.step(c, n / std::pow(2.0, s), 2);  // halving + doubling
  if (!power_of_two(p)) l.step(c, n, 2);
  reduce_bytes(l, c, n * frac(p));
  return c;
}
CostTerms allreduce_ring(const Link& l, double n, int p) {
  CostTerms c;
  l.step(c, n / p, 2.0 * (p - 1));
  reduce_bytes(l, c, n * frac(p));
  return c;
}
// --- allgather (n = total gathered)
CostTerms allgather_ring(const Link& l, double n, int p) {
  CostTerms c;
  l.step(c, n / p, p - 1);
  return c;
}
CostTerms allgather_recursive_doubling(const Link& l, double n, int p) {
  CostTerms c;
  // Step k moves 2^k blocks (the last step what is left); Bruck's algorithm has the
  // same cost for any p.
  double block = n / p, blocks_moved = 0;
  for (int k = 0; k < ceil_lg(p); ++k) {
    double blocks = std::min(std::pow(2.0, k), double(p - 1) - blocks_moved);
    l.step(c, blocks * block);
    blocks_moved += blocks;
  }
  return c;
}
// --- reduce_scatter (n = total input)
CostTerms reduce_scatter_recursive_halving(const Link& l, double n, int p) {
  CostTerms c;
  for (int k = 1; k <= ceil_lg(p); ++k) l.step(c, n / std::pow(2.0, k));
  reduce_bytes(l, c, n * frac(p));
  return c;
}
CostTerms reduce_scatter_pairwise(const Link& l, double n, int p) {
  CostTerms c;
  l.step(c, n / p, p - 1);
  reduce_bytes(l, c, n * frac(p));
  return c;
}
// --- bcast
// The binomial tree's critical path (MPICH's order: each rank, once it has the data,
// sends to relative ranks r + mask for masks below its own lowest set bit, largest
// first). Rank r is popcount(r) hops from the root; the k-th send of a sender leaves
// after its k-1 earlier ones, so it adds k injections (beta n) and one latency
// (alpha). At powers of two the slowest rank sees lg p of each, the textbook
// lg p (alpha + n beta); otherwise fewer latencies than rounds: at p = 3 the root's
// two sends overlap in flight, alpha + 2 n beta, where ceil(lg p) rounds said 2 alpha
// + 2 n beta (68% high across namespace hosts at 200 us).
CostTerms bcast_binomial(const Link& l, double n, int p) {
  CostTerms best;
  if (p < 2) return best;
  CostTerms unit;  // one latency and one injection of n bytes
  l.path(unit, n, 1, 1);
  int top = 1;
  while (top < p) top <<= 1;
  double worst = -1, worst_hops = 0, worst_injections = 0;
  for (int r = 1; r < p; ++r) {
    double hops = 0, injections = 0;
    int q = 0, q_top = top;  // the sender, and the mask above its largest send
    for (int mask = top >> 1; mask > 0; mask >>= 1) {
      if (!(r & mask)) continue;
      // q sends to q + m for m = q_top/2, ..., mask (those below p), in that order.
      for (int m = q_top >> 1; m >= mask; m >>= 1)
        if (q + m < p) injections += 1;
      hops += 1;
      q += mask;
      q_top = mask;
    }
    const double t = hops * unit.alpha_part + injections * unit.beta_part;
    if (t > worst) worst = t, worst_hops = hops, worst_injections = injections;
  }
  l.path(best, n, worst_hops, worst_injections);
  return best;
}
CostTerms bcast_scatter_allgather(const Link& l, double n, int p) {
  CostTerms c;
  for (int k = 1; k <= ceil_lg(p); ++k) l.step(c, n / std::pow(2.0, k));  // binomial scatter
  CostTerms ag = allgather_recursive_doubling(l, n, p);
  c.alpha_part += ag.alpha_part;
  c.beta_part += ag.beta_part;
  return c;
}
// --- reduce
CostTerms reduce_binomial(const Link& l, double n, int p) {
  CostTerms c;
  l.step(c, n, ceil_lg(p));
  reduce_bytes(l, c, n * ceil_lg(p));
  return c;
}
CostTerms reduce_rabenseifner(const Link& l, double n, int p) {
  CostTerms c = reduce_scatter_recursive_halving(l, n, p);
  for (int k = 1; k <= ceil_lg(p); ++k) l.step(c, n / std::pow(2.0, k));  // binomial gather
  return c;
}
// --- alltoall (n = total sent by a rank)
CostTerms alltoall_bruck(const Link& l, double n, int p) {
  CostTerms c;
  l.step(c, n / 2, ceil_lg(p));
  return c;
}
CostTerms alltoall_pairwise(const Link& l, double n, int p) {
  CostTerms c;
  l.step(c, n / p, p - 1);
  return c;
}
// --- gather / scatter (n = total)
CostTerms gather_binomial(const Link& l, double n, int p) {
  CostTerms c;
  for (int k = ceil_lg(p) - 1; k >= 0; --k) l.step(c, n * std::pow(2.0, k) / p);
  return c;
}
// --- barrier
CostTerms barrier_dissemination(const Link& l, double, int p) {
  CostTerms c;
  l.step(c, 0, ceil_lg(p));
  return c;
}

const CollectiveAlgorithm table[] = {
    {"allreduce", "recursive_doubling", allreduce_recursive_doubling, "recursive_doubling"},
    {"allreduce", "rabenseifner", allreduce_rabenseifner, "reduce_scatter_allgather"},
    {"allreduce", "ring", allreduce_ring, "ring"},
    {"allgather", "ring", allgather_ring, "ring"},
    {"allgather", "recursive_doubling", allgather_recursive_doubling, "recursive_doubling brucks"},
    {"reduce_scatter", "recursive_halving", reduce_scatter_recursive_halving, "recursive_halving"},
    {"reduce_scatter", "pairwise", reduce_scatter_pairwise, "pairwise"},
    {"bcast", "binomial", bcast_binomial, "binomial"},
    {"bcast", "scatter_allgather", bcast_scatter_allgather, "scatter_recursive_doubling_allgather"},
    {"reduce", "binomial", reduce_binomial, "binomial"},
    {"reduce", "rabenseifner", reduce_rabenseifner, "reduce_scatter_gather"},
    {"alltoall", "bruck", alltoall_bruck, "brucks"},
    {"alltoall", "pairwise", alltoall_pairwise, "pairwise pairwise_sendrecv_replace"},
    {"gather", "binomial", gather_binomial, "binomial"},
    {"scatter", "binomial", gather_binomial, "binomial"},
    {"barrier", "dissemination", barrier_dissemination, "dissemination"},
};
}  // namespace

void Link::path(CostTerms& c, double m, double latencies, double injections) const {
  const PiecewiseTerms t = predict_terms(*pt2pt, std::max(m, 0.0));
  c.alpha_part += latencies * t.alpha_part;
  c.beta_part += injections * t.beta_part;
}

void Link::step(CostTerms& c, double m, double count) const {
  if (count > 0) path(c, m, count, count);
}

std::vector<const CollectiveAlgorithm*> algorithms_for(std::string_view op) {
  std::vector<const CollectiveAlgorithm*> out;
  for (const auto& a : table)
    if (a.op == op) out.push_back(&a);
  return out;
}

const CollectiveAlgorithm* find_algorithm(std::string_view op, std::string_view name) {
  for (const auto& a : table)
    if (a.op == op && a.name == name) return &a;
  return nullptr;
}

double busbw_factor(std::string_view op, int p) {
  if (op == "allreduce") return p > 0 ? 2.0 * (p - 1) / p : 0;
  if (op == "reduce_scatter" || op == "allgather" || op == "alltoall" || op == "gather" || op == "scatter")
    return frac(p);
  return 1;
}

const CollectiveAlgorithm* find_library_algorithm(std::string_view op, std::string_view library_name) {
  // MPICH's non-blocking collectives name the same algorithms with the machinery that
  // runs them first: sched_recursive_doubling, tsp_ring.
  for (std::string_view machinery : {"sched_", "tsp_"})
    if (library_name.rfind(machinery, 0) == 0) library_name.remove_prefix(machinery.size());
  for (const auto& a : table) {
    if (a.op != op) continue;
    for (std::string_view names = a.library_names; !names.empty();) {
      const auto space = names.find(' ');
      if (names.substr(0, space) == library_name) return &a;
      names = space == std::string_view::npos ? std::string_view{} : names.substr(space + 1);
    }
  }
  return nullptr;
}

namespace {
constexpr std::string_view isolated_suffix = "~isolated";
}

std::string isolated_form(std::string_view benchmark) { return std::string(benchmark) + std::string(isolated_suffix); }
bool is_isolated_form(std::string_view benchmark) {
  return benchmark.size() > isolated_suffix.size() &&
         benchmark.substr(benchmark.size() - isolated_suffix.size()) == isolated_suffix;
}

std::string_view base_op(std::string_view benchmark) {
  benchmark = benchmark.substr(0, benchmark.find_first_of("@~"));
  if (!benchmark.empty() && benchmark[0] == 'i' && !algorithms_for(benchmark.substr(1)).empty())
    return benchmark.substr(1);
  return benchmark;
}

std::string_view forced_algorithm(std::string_view benchmark) {
  const auto at = benchmark.find('@');
  return at == std::string_view::npos ? std::string_view{} : benchmark.substr(at + 1, benchmark.find('~', at) - at - 1);
}

namespace {

// A size and the algorithm that explains it, with measured / that algorithm's formula.
struct Pick {
  const Measured* m;
  const CollectiveAlgorithm* alg;
  double ratio;
};

// Contiguous sizes with the same algorithm form a range; isolated flips of a single
// size inside a range are noise, not a switch, and are absorbed. `alike(a, chosen, m)`:
// whether algorithm a cannot be told apart from the chosen one at size m.
template <class Alike>
std::vector<AlgorithmRange> ranges_of(std::vector<Pick>& picks, const std::vector<const CollectiveAlgorithm*>& algs,
                                      const Link& link, int p, Alike alike) {
  std::vector<AlgorithmRange> ranges;
  for (std::size_t i = 1; i + 1 < picks.size(); ++i)
    if (picks[i].alg != picks[i - 1].alg && picks[i - 1].alg == picks[i + 1].alg) {
      picks[i].alg = picks[i - 1].alg;
      picks[i].ratio = picks[i].m->seconds / picks[i].alg->cost(link, picks[i].m->data_bytes, p).total();
    }
  for (std::size_t i = 0; i < picks.size();) {
    std::size_t j = i;
    std::vector<double> ratios, errors;
    std::vector<const CollectiveAlgorithm*> ties;
    for (const auto* a : algs)
      if (a != picks[i].alg) ties.push_back(a);
    while (j < picks.size() && picks[j].alg == picks[i].alg) {
      ratios.push_back(picks[j].ratio);
      errors.push_back(std::fabs(picks[j].ratio - 1));
      std::erase_if(ties, [&](const CollectiveAlgorithm* a) { return !alike(a, picks[j].alg, *picks[j].m); });
      ++j;
    }
    AlgorithmRange r{picks[i].m->bytes, picks[j - 1].m->bytes, std::string(picks[i].alg->name), stats::median(ratios),
                     stats::median(errors), {}};
    for (const auto* a : ties) r.indistinguishable.emplace_back(a->name);
    ranges.push_back(std::move(r));
    i = j;
  }
  return ranges;
}

}  // namespace

std::vector<AlgorithmRange> identify_algorithms(std::string_view op, const Link& link, int p,
                                                std::span<const Measured> measured) {
  auto algs = algorithms_for(op);
  if (algs.empty() || !link.pt2pt) return {};
  std::vector<Pick> picks;
  for (const auto& m : measured) {
    if (!(m.seconds > 0)) continue;
    const CollectiveAlgorithm* best = nullptr;
    double best_err = 0, best_ratio = 1;
    for (const auto* a : algs) {
      double t = a->cost(link, m.data_bytes, p).total();
      if (!(t > 0)) continue;
      double err = std::fabs(std::log(m.seconds / t));
      if (!best || err < best_err) {
        best = a;
        best_err = err;
        best_ratio = m.seconds / t;
      }
    }
    if (best) picks.push_back({&m, best, best_ratio});
  }
  // Two algorithms cannot be told apart at a size when their formulas agree there.
  return ranges_of(picks, algs, link, p, [&](const CollectiveAlgorithm* a, const CollectiveAlgorithm* chosen, const Measured& m) {
    return std::fabs(a->cost(link, m.data_bytes, p).total() / chosen->cost(link, m.data_bytes, p).total() - 1) <= 0.02;
  });
}

std::vector<AlgorithmRange> identify_by_forcing(const Link& link, int p, std::span<const Measured> chosen,
                                                std::span<const ForcedRun> forced) {
  if (!link.pt2pt) return {};
  // The forced run's time at a size (0 where it has none).
  auto time_at = [](const ForcedRun& f, double bytes) {
    for (const auto& m : f.measured)
      if (m.bytes == bytes) return m.seconds;
    return 0.0;
  };
  std::vector<const CollectiveAlgorithm*> algs;
  for (const auto& f : forced)
    if (f.algorithm && std::find(algs.begin(), algs.end(), f.algorithm) == algs.end()) algs.push_back(f.algorithm);
  std::vector<Pick> picks;
  for (const auto& m : chosen) {
    if (!(m.seconds > 0)) continue;
    const ForcedRun* best = nullptr;
    double best_err = 0;
    for (const auto& f : forced) {
      const double t = f.algorithm ? time_at(f, m.bytes) : 0.0;
      if (!(t > 0)) continue;
      const double err = std::fabs(std::log(m.seconds / t));
      if (!best || err < best_err) best = &f, best_err = err;
    }
    if (!best) continue;
    const double formula = best->algorithm->cost(link, m.data_bytes, p).total();
    if (formula > 0) picks.push_back({&m, best->algorithm, m.seconds / formula});
  }
  // Indistinguishable: another forced algorithm measured within 2% of the chosen one.
  return ranges_of(picks, algs, link, p, [&](const CollectiveAlgorithm* a, const CollectiveAlgorithm* chosen_alg, const Measured& m) {
    double ta = 0, tc = 0;
    for (const auto& f : forced) {
      if (f.algorithm == a && !(ta > 0)) ta = time_at(f, m.bytes);
      if (f.algorithm == chosen_alg && !(tc > 0)) tc = time_at(f, m.bytes);
    }
    return ta > 0 && tc > 0 && std::fabs(ta / tc - 1) <= 0.02;
  });
}

}  // namespace sextant::model
