#include "models/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <stdexcept>
#include <utility>

#include "core/stats.hpp"

namespace sextant::model {
namespace {

int ceil_lg(int p) { return p > 1 ? static_cast<int>(std::ceil(std::log2(static_cast<double>(p)))) : 0; }
bool power_of_two(int p) { return p > 0 && (p & (p - 1)) == 0; }
double frac(int p) { return p > 0 ? double(p - 1) / p : 0.0; }

void reduce_bytes(const Link& l, CostTerms& c, double bytes) { c.gamma_part += l.gamma * bytes; }

// --- Schedules: an algorithm as the rounds its ranks run, timed message by message.
//
// MPICH runs its collectives as schedules: a rank posts a round's sends and receives
// together and starts its next round when all of them have completed (and it has
// combined what it received). Where the ranks' paths differ (trees, and the ranks folded
// in and out when p is not a power of two) a count of rounds is not the time: at p = 5
// recursive doubling's folded rank waits 4 rounds, but its partner's data left after 1,
// so the slowest rank finishes after 3 latencies (measured across namespace hosts: 3.1).
// Each message of m bytes leaves when its round starts and its sender's port is free,
// holds that port beta(m) m, and arrives alpha(m) later; a rank's incoming messages pass
// its port one at a time. Times carry their alpha, beta and gamma parts: the slowest
// rank's critical path is the cost.
struct Round {
  std::vector<std::pair<int, double>> sends, recvs;  // (peer, bytes)
  double combine_bytes = 0;                          // reduced after the receives
};
using Rounds = std::vector<std::vector<Round>>;      // [rank][round]

CostTerms later(const CostTerms& a, const CostTerms& b) { return b.total() > a.total() ? b : a; }

CostTerms critical_path(const Link& l, const Rounds& rounds) {
  const int p = static_cast<int>(rounds.size());
  struct Rank {
    std::size_t next = 0;
    bool posted = false;
    CostTerms ready, port_out, port_in, sent;
  };
  std::vector<Rank> ranks(p);
  // In flight from src to dst, in posting order (MPI's matching order on one channel).
  std::map<std::pair<int, int>, std::deque<std::pair<CostTerms, double>>> channels;
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      Rank& me = ranks[r];
      while (me.next < rounds[r].size()) {
        const Round& round = rounds[r][me.next];
        if (!me.posted) {
          me.sent = me.ready;
          for (const auto& [dst, m] : round.sends) {
            const PiecewiseTerms t = predict_terms(*l.pt2pt, std::max(m, 0.0));
            CostTerms leave = later(me.ready, me.port_out);
            leave.beta_part += t.beta_part;
            me.port_out = me.sent = leave;
            leave.alpha_part += t.alpha_part;
            channels[{r, dst}].push_back({leave, m});
          }
          me.posted = true;
        }
        bool all_there = true;
        for (const auto& [src, m] : round.recvs) {
          std::size_t wanted = 0;
          for (const auto& [s2, m2] : round.recvs) wanted += s2 == src;
          if (channels[{src, r}].size() < wanted) all_there = false;
        }
        if (!all_there) break;
        CostTerms done = later(me.ready, me.sent);
        for (const auto& [src, m] : round.recvs) {
          auto& q = channels[{src, r}];
          CostTerms arrived = q.front().first;
          q.pop_front();
          CostTerms through = me.port_in;  // the port passes one message at a time
          through.beta_part += predict_terms(*l.pt2pt, std::max(m, 0.0)).beta_part;
          me.port_in = later(arrived, through);
          done = later(done, me.port_in);
        }
        reduce_bytes(l, done, round.combine_bytes);
        me.ready = done;
        me.posted = false;
        ++me.next;
        progress = true;
      }
    }
  }
  CostTerms slowest;
  for (int r = 0; r < p; ++r) {
    if (ranks[r].next < rounds[r].size()) throw std::logic_error("collective schedule deadlocks");
    slowest = later(slowest, ranks[r].ready);
  }
  return slowest;
}

// MPICH's fold for p not a power of two: the even ranks below 2 rem (rem = p - pof2)
// hand their data to the next rank and sit out; the others form a power of two
// (`member` maps the rank to its place in it, -1 when sitting out, `real` back).
struct Fold {
  int pof2 = 1, rem = 0;
  explicit Fold(int p) {
    while (pof2 * 2 <= p) pof2 *= 2;
    rem = p - pof2;
  }
  int member(int r) const { return r < 2 * rem ? (r % 2 ? r / 2 : -1) : r - rem; }
  int real(int m) const { return m < rem ? 2 * m + 1 : m + rem; }
};

// Recursive doubling among the fold's members, exchanging `bytes(k)` in step k
// (combining them when `combine`); the folded ranks' data in before, the result out after.
Rounds folded_exchange(int p, double in_bytes, double out_bytes, int steps, const std::function<double(int)>& bytes,
                       const std::function<int(int, int)>& partner, bool combine) {
  const Fold f(p);
  Rounds rounds(p);
  for (int r = 0; r < p; ++r) {
    auto& mine = rounds[r];
    const int me = f.member(r);
    if (r < 2 * f.rem && me < 0) {
      mine.push_back({{{r + 1, in_bytes}}, {}, 0});
      mine.push_back({{}, {{r + 1, out_bytes}}, 0});
      continue;
    }
    if (r < 2 * f.rem) mine.push_back({{}, {{r - 1, in_bytes}}, combine ? in_bytes : 0});
    for (int k = 0; k < steps; ++k) {
      const int peer = f.real(partner(me, k));
      mine.push_back({{{peer, bytes(k)}}, {{peer, bytes(k)}}, combine ? bytes(k) : 0});
    }
    if (r < 2 * f.rem) mine.push_back({{{r - 1, out_bytes}}, {}, 0});
  }
  return rounds;
}

int log2_floor(int p) {
  int k = 0;
  while ((2 << k) <= p) ++k;
  return k;
}

// --- allreduce
CostTerms allreduce_recursive_doubling(const Link& l, double n, int p) {
  if (p < 2) return {};
  return critical_path(l, folded_exchange(p, n, n, log2_floor(p), [n](int) { return n; },
                                          [](int me, int k) { return me ^ (1 << k); }, true));
}
CostTerms allreduce_rabenseifner(const Link& l, double n, int p) {
  if (p < 2) return {};
  // Recursive halving (a reduce-scatter) then recursive doubling (an allgather) among
  // the fold's members: step k of lg pof2 moves n / 2^(k+1), then the same back.
  const int k_max = log2_floor(p);
  const double pof2 = std::ldexp(1.0, k_max);
  auto bytes = [&](int k) { return k < k_max ? n / std::ldexp(1.0, k + 1) : n * std::ldexp(1.0, k - k_max) / pof2; };
  auto partner = [&](int me, int k) { return k < k_max ? me ^ (1 << (k_max - 1 - k)) : me ^ (1 << (k - k_max)); };
  Rounds rounds = folded_exchange(p, n, n, 2 * k_max, bytes, partner, false);
  // The halving steps combine what they receive; the doubling steps only place it.
  const Fold f(p);
  for (int r = 0; r < p; ++r) {
    if (f.member(r) < 0) continue;
    const std::size_t first = r < 2 * f.rem ? 1 : 0;
    if (r < 2 * f.rem) rounds[r][0].combine_bytes = n;
    for (int k = 0; k < k_max; ++k) rounds[r][first + k].combine_bytes = bytes(k);
  }
  return critical_path(l, rounds);
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
  if (p < 2) return {};
  // Step k of lg pof2 sends the half of what is left that the partner keeps.
  const int k_max = log2_floor(p);
  return critical_path(l, folded_exchange(p, n, n / p, k_max, [&](int k) { return n / std::ldexp(1.0, k + 1); },
                                          [&](int me, int k) { return me ^ (1 << (k_max - 1 - k)); }, true));
}
CostTerms reduce_scatter_pairwise(const Link& l, double n, int p) {
  CostTerms c;
  l.step(c, n / p, p - 1);
  reduce_bytes(l, c, n * frac(p));
  return c;
}
// --- bcast and reduce: binomial trees rooted at 0 (MPICH's order: a rank that has the
// data sends to r + mask for the masks below its lowest set bit, largest first; a
// reduction receives from r + mask, smallest first, then sends to r - its lowest bit).
int lowest_bit_or_top(int r, int p) {
  if (r) return r & -r;
  int top = 1;
  while (top < p) top <<= 1;
  return top;
}
CostTerms bcast_binomial(const Link& l, double n, int p) {
  Rounds rounds(p);
  for (int r = 0; r < p; ++r) {
    const int low = lowest_bit_or_top(r, p);
    if (r) rounds[r].push_back({{}, {{r - low, n}}, 0});
    Round sends;
    for (int m = low >> 1; m > 0; m >>= 1)
      if (r + m < p) sends.sends.push_back({r + m, n});
    if (!sends.sends.empty()) rounds[r].push_back(sends);
  }
  return critical_path(l, rounds);
}
CostTerms reduce_binomial(const Link& l, double n, int p) {
  Rounds rounds(p);
  for (int r = 0; r < p; ++r) {
    const int low = lowest_bit_or_top(r, p);
    for (int m = 1; m < low && r + m < p; m <<= 1) rounds[r].push_back({{}, {{r + m, n}}, n});
    if (r) rounds[r].push_back({{{r - low, n}}, {}, 0});
  }
  return critical_path(l, rounds);
}
CostTerms bcast_scatter_allgather(const Link& l, double n, int p) {
  CostTerms c;
  for (int k = 1; k <= ceil_lg(p); ++k) l.step(c, n / std::pow(2.0, k));  // binomial scatter
  CostTerms ag = allgather_recursive_doubling(l, n, p);
  c.alpha_part += ag.alpha_part;
  c.beta_part += ag.beta_part;
  return c;
}
// A chain from the root (MPICH's tsp_ring: a tree of one child each, the whole vector at
// once): p - 1 hops of n; a reduction combines n at each.
CostTerms bcast_chain(const Link& l, double n, int p) {
  CostTerms c;
  l.step(c, n, p - 1);
  return c;
}
CostTerms reduce_chain(const Link& l, double n, int p) {
  CostTerms c = bcast_chain(l, n, p);
  reduce_bytes(l, c, n * (p - 1));
  return c;
}
// --- reduce
CostTerms reduce_rabenseifner(const Link& l, double n, int p) {
  if (p < 2) return {};
  // A reduce-scatter by recursive halving among the fold's members, then a binomial
  // gather of the blocks to member 0 (the root's place; a folded root gets the result
  // from it in one more message).
  const int k_max = log2_floor(p);
  const Fold f(p);
  Rounds rounds = folded_exchange(p, n, 0, k_max, [&](int k) { return n / std::ldexp(1.0, k + 1); },
                                  [&](int me, int k) { return me ^ (1 << (k_max - 1 - k)); }, true);
  for (int r = 0; r < p; ++r) {
    if (r < 2 * f.rem) rounds[r].pop_back();  // nothing goes back to the folded ranks
    const int me = f.member(r);
    if (me < 0) continue;
    const double block = n / f.pof2;
    for (int k = 0; k < k_max; ++k) {
      const int bit = 1 << k;
      if (me & bit) {
        rounds[r].push_back({{{f.real(me - bit), block * bit}}, {}, 0});
        break;
      }
      if (me + bit < f.pof2) rounds[r].push_back({{}, {{f.real(me + bit), block * bit}}, 0});
    }
  }
  if (f.real(0) != 0) {
    rounds[f.real(0)].push_back({{{0, n}}, {}, 0});
    rounds[0].push_back({{}, {{f.real(0), n}}, 0});
  }
  return critical_path(l, rounds);
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
// Every block posted at once (MPICH's permuted_sendrecv and scattered): one latency, the
// sender's port passing the p - 1 blocks.
CostTerms alltoall_all_at_once(const Link& l, double n, int p) {
  CostTerms c;
  if (p > 1) l.path(c, n / p, 1, p - 1);
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

bool runs_at_powers_of_two(int p) { return power_of_two(p); }

const CollectiveAlgorithm table[] = {
    {"allreduce", "recursive_doubling", allreduce_recursive_doubling, "recursive_doubling"},
    {"allreduce", "rabenseifner", allreduce_rabenseifner, "reduce_scatter_allgather"},
    {"allreduce", "ring", allreduce_ring, "ring"},
    {"allgather", "ring", allgather_ring, "ring"},
    {"allgather", "recursive_doubling", allgather_recursive_doubling, "recursive_doubling brucks"},
    {"reduce_scatter", "recursive_halving", reduce_scatter_recursive_halving, "recursive_halving"},
    {"reduce_scatter", "pairwise", reduce_scatter_pairwise, "pairwise"},
    {"bcast", "binomial", bcast_binomial, "binomial"},
    {"bcast", "scatter_allgather", bcast_scatter_allgather, "scatter_recursive_doubling_allgather", runs_at_powers_of_two},
    {"bcast", "chain", bcast_chain, "ring"},
    {"reduce", "binomial", reduce_binomial, "binomial"},
    {"reduce", "chain", reduce_chain, "ring"},
    {"reduce", "rabenseifner", reduce_rabenseifner, "reduce_scatter_gather"},
    {"alltoall", "bruck", alltoall_bruck, "brucks"},
    {"alltoall", "pairwise", alltoall_pairwise, "pairwise pairwise_sendrecv_replace"},
    {"alltoall", "all_at_once", alltoall_all_at_once, "permuted_sendrecv scattered"},
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
  // The forced run's measurement at a size (nullptr where it has none).
  auto at = [](const ForcedRun& f, double bytes) -> const Measured* {
    for (const auto& m : f.measured)
      if (m.bytes == bytes && m.seconds > 0) return &m;
    return nullptr;
  };
  auto time_at = [&](const ForcedRun& f, double bytes) {
    const Measured* m = at(f, bytes);
    return m ? m->seconds : 0.0;
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
  // Indistinguishable: another forced algorithm measured within 2% of the chosen one, or
  // within twice their combined standard error where the runs are noisier than that (at
  // p = 3 a reduce-scatter's pairwise and folded recursive halving both take two
  // latencies: 1.14 and 1.12 ms, +-2.5%, across namespace hosts; they part at p = 5).
  // Or one whose formula agrees with the chosen one's at this size and p (within 2%, as
  // identify_algorithms): a measured difference between them there is what their
  // implementations add, which the calibration carries, not a difference the formulas
  // can extrapolate (at p = 3 a ring and a recursive-doubling allgather both take two
  // steps of n/3; which one the library's choice sat nearer to must not decide that it
  // takes four steps or three at p = 5).
  return ranges_of(picks, algs, link, p, [&](const CollectiveAlgorithm* a, const CollectiveAlgorithm* chosen_alg, const Measured& m) {
    const double formula = chosen_alg->cost(link, m.data_bytes, p).total();
    if (formula > 0 && std::fabs(a->cost(link, m.data_bytes, p).total() / formula - 1) <= 0.02) return true;
    const Measured *ma = nullptr, *mc = nullptr;
    for (const auto& f : forced) {
      if (f.algorithm == a && !ma) ma = at(f, m.bytes);
      if (f.algorithm == chosen_alg && !mc) mc = at(f, m.bytes);
    }
    if (!ma || !mc) return false;
    const double noise = 2 * std::hypot(ma->rel_sigma, mc->rel_sigma);
    return std::fabs(ma->seconds / mc->seconds - 1) <= std::max(0.02, noise);
  });
}

}  // namespace sextant::model
