#pragma once
// Algorithm-aware collective models (view b): the cost of each algorithm MPI
// libraries use, built from the point-to-point Hockney model of the same level and
// a local reduction rate gamma. Comparing them with the measured collective reveals
// which algorithm the library ran at which size, and lets the model extrapolate in
// the rank count p, which a direct fit at one p cannot do.
//
// Costs (the closed forms of the collective-algorithm literature and MPICH's cost
// comments; docs/models.md), n = bytes counted for algbw:
//   each step of m bytes costs alpha(m) + beta(m) * m with the pt2pt segment of m,
//   reductions add gamma per byte combined.
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/hockney.hpp"

namespace sextant::model {

struct CostTerms {
  double alpha_part = 0, beta_part = 0, gamma_part = 0;
  double total() const { return alpha_part + beta_part + gamma_part; }
};

// The link: the pt2pt piecewise Hockney fit (one-way ping-pong time).
struct Link {
  const PiecewiseFit* pt2pt = nullptr;
  double gamma = 0;  // seconds per byte reduced (0 when not measured)
  // One message of m bytes.
  void step(CostTerms& c, double m, double count = 1) const;
  // A path of messages of m bytes: `latencies` alpha terms, `injections` beta terms
  // (a sender's consecutive sends overlap in flight but leave its port one by one).
  void path(CostTerms& c, double m, double latencies, double injections) const;
};

struct CollectiveAlgorithm {
  std::string_view op;    // allreduce, allgather, ...
  std::string_view name;  // ring, recursive_doubling, ...
  CostTerms (*cost)(const Link& link, double n, int p);
  // What MPI libraries call it in their algorithm controls (MPICH's names; the comm
  // suite forces them through MPI_T), space-separated.
  std::string_view library_names = "";
  // The rank counts the library runs it at (nullptr: any). Elsewhere a library that is
  // asked for it runs its own choice instead (MPICH falls back silently): a forced run
  // there measured that choice, not this algorithm.
  bool (*runs_at)(int p) = nullptr;
  bool runs(int p) const { return !runs_at || runs_at(p); }
};

// Every algorithm known for an op (empty for ops without a model).
std::vector<const CollectiveAlgorithm*> algorithms_for(std::string_view op);
const CollectiveAlgorithm* find_algorithm(std::string_view op, std::string_view name);

// nccl-tests bus-bandwidth factor of an op at p ranks (1 for unknown ops).
double busbw_factor(std::string_view op, int p);

// The algorithm whose cost an MPI library's algorithm of that name has (its blocking or
// non-blocking collectives' name: recursive_doubling, sched_recursive_doubling), or nullptr.
const CollectiveAlgorithm* find_library_algorithm(std::string_view op, std::string_view library_name);

// The blocking op a benchmark name models ("iallreduce" -> "allreduce",
// "allreduce@ring" -> "allreduce", "allreduce~isolated" -> "allreduce").
std::string_view base_op(std::string_view benchmark);
// The library algorithm a benchmark forced ("allreduce@ring" -> "ring"); empty for the
// library's own choice.
std::string_view forced_algorithm(std::string_view benchmark);

// A benchmark's isolated form: each timed call after an idle gap (`sextant run --gap`),
// as a collective that follows compute meets the transport, where the plain name is the
// back-to-back form (OSU's). Results and fits name it "<benchmark>~isolated".
std::string isolated_form(std::string_view benchmark);
bool is_isolated_form(std::string_view benchmark);

// Which algorithm explains each measured size best, grouped into contiguous ranges.
struct AlgorithmRange {
  double lo_bytes = 0, hi_bytes = 0;  // swept sizes (benchmark unit)
  std::string algorithm;
  double calibration = 1;             // median measured / algorithm prediction in the range
  double median_abs_error = 0;        // of the uncalibrated algorithm prediction
  // Algorithms whose cost is within 2% of the chosen one at every size of the range:
  // at this p the measurements cannot tell them apart (common at p = 2).
  std::vector<std::string> indistinguishable;
};

struct Measured {
  double bytes = 0;       // swept size
  double data_bytes = 0;  // n for the cost formulas
  double seconds = 0;
  double rel_sigma = 0;   // relative standard error of seconds (0 = unknown)
};

std::vector<AlgorithmRange> identify_algorithms(std::string_view op, const Link& link, int p,
                                                std::span<const Measured> measured);

// The same, measured rather than inferred: at each size the library's own choice
// (`chosen`) is the forced algorithm whose time there was nearest (each forced run as
// its cost formula and its measured points, at the same sizes). Ranges as above, each
// calibrated against its algorithm's formula; forced algorithms within 2% (or within
// their measurement noise) of the chosen one's time, or whose formula is within 2% of
// its formula, at every size of a range are its indistinguishable ones.
struct ForcedRun {
  const CollectiveAlgorithm* algorithm = nullptr;
  std::span<const Measured> measured;
};
std::vector<AlgorithmRange> identify_by_forcing(const Link& link, int p, std::span<const Measured> chosen,
                                                std::span<const ForcedRun> forced);

}  // namespace sextant::model
