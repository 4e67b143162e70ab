#pragma once
// Communication models: fitted from a results file, stored in a model file, and
// queried for predictions. This is the C++ API other tools link (sextant::model).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/h5.hpp"
#include "core/schema.hpp"
#include "models/collectives.hpp"
#include "models/hockney.hpp"

namespace sextant::model {

// One fitted operation: a benchmark at a communicator level, datatype and rank count.
struct CommFit {
  std::string benchmark, level, dtype;
  int ranks = 0;
  bool oversubscribed = false;      // fitted on timings that are not meaningful
  double busbw_factor = 1;
  double data_bytes_per_byte = 1;   // algbw bytes per swept byte at this rank count
  SizeUnit size_unit = SizeUnit::vector;  // per_rank_block: algbw bytes = size x ranks
  PiecewiseFit fit;                 // T(bytes) with bytes the swept size unit
  double bytes_min = 0, bytes_max = 0;  // fitted range
};

// View (b): which algorithm the library ran per size range at one rank count, from
// the pt2pt link of the same level and gamma; predicts other rank counts.
struct AlgorithmFit {
  std::string benchmark, level, dtype;
  int ranks = 0;
  SizeUnit size_unit = SizeUnit::vector;
  std::vector<AlgorithmRange> ranges;
  double gamma = 0;               // s/byte, from reduce_local (0 when not measured)
  int link_ranks = 0;             // rank count of the pingpong fit used as the link
  // How the ranges' algorithms were found: "inferred" (the cost formula nearest each
  // measured size), "measured" (the library's own choice compared with each of its
  // algorithms forced at the same sizes), "forced" (a forced run: its own algorithm).
  std::string selection = "inferred";
};

// LogGP as far as these measurements allow: the ping-pong latency is L + 2o (o is not
// measured apart from L), the gap g is the time per message of a stream of small
// messages, G the time per byte of a stream of large ones.
struct LogGP {
  std::string level;
  int ranks = 0;
  double L_plus_2o = 0, g = 0, G = 0;  // seconds, seconds, seconds per byte
};

// How a prediction was made: from the operation's own fit at its rank count (direct), or
// from the algorithm the library ran, costed on the pt2pt link at another (algorithm).
enum class View { direct, algorithm };
const char* to_string(View view);

struct Prediction {
  View view = View::direct;
  double seconds = 0, lo = 0, hi = 0;  // point estimate and interval
  double alpha_part = 0, beta_part = 0, gamma_part = 0;
  std::string algorithm;               // algorithm view: the algorithm of the size range
  double calibration = 1;              // algorithm view: measured / pt2pt-derived at the fitted p
  const AlgorithmFit* algorithm_fit = nullptr;
  double busbw = 0;                    // bytes/s
  const CommFit* from = nullptr;
  std::size_t segment = 0;
  bool bridged = false;                // in the gap between two fitted ranges: interpolated (hockney.hpp)
  bool extrapolated_bytes = false;     // outside the fitted size range
  bool extrapolated_ranks = false;     // rank count differs from the fitted one
  std::string note;
};

// One benchmark group of a results file, as the fits read it: the valid sizes in
// sweep order (ascending), times per message (bandwidth windows divided out).
struct MeasuredGroup {
  std::string where, benchmark, level, dtype;
  SizeUnit size_unit = SizeUnit::vector;
  int ranks = 0;
  bool oversubscribed = false;
  double busbw_factor = 1, data_bytes_per_byte = 1;
  std::vector<Measured> points;
  std::size_t unmeasured = 0;   // sizes stored without a time (left out of the points)
  std::string unmeasured_reason;  // the first one's, as the run stored it
  std::vector<Point> hockney_points() const {
    std::vector<Point> p;
    for (const auto& m : points) p.push_back({m.bytes, m.seconds, m.rel_sigma});
    return p;
  }
};
std::vector<MeasuredGroup> read_comm_results(const std::string& results_path);

// Held-out check: fit on every other size and the largest, predict the sizes left out
// (all inside the fitted range).
struct HoldoutRow {
  std::string benchmark, level, dtype;
  int ranks = 0;
  std::size_t small_n = 0, large_n = 0;  // held-out sizes below / at-or-above split_bytes
  double small_mape = 0, large_mape = 0; // mean absolute percentage error
};
std::vector<HoldoutRow> holdout_check(const std::string& results_path, double split_bytes = 65536,
                                      const FitOptions& options = {});

class CommModel {
 public:
  std::vector<CommFit> fits;
  std::vector<AlgorithmFit> algorithms;
  std::vector<LogGP> loggp;

  // Fits every comm benchmark in a results file (schema checked).
  static CommModel fit_results(const std::string& results_path, const FitOptions& options = {});
  // The model file's comm part (/comm, /comm_loggp, /comm_algorithms under the root of
  // a file whose schema was checked): read_model_file (models/model_file.hpp) calls it.
  static CommModel read(const h5::Group& root);
  // Writes /comm, /comm_loggp and /comm_algorithms under root.
  void write_into(h5::Group& root) const;

  // The fit for (benchmark, level, dtype) nearest in rank count to `ranks`.
  const CommFit* find(const std::string& benchmark, const std::string& level, const std::string& dtype,
                      int ranks) const;
  // The direct fit at exactly this rank count when there is one; else the algorithm
  // view, scaled to `ranks`; else the nearest direct fit, flagged.
  Prediction predict(const std::string& benchmark, double bytes, int ranks, const std::string& level = "world",
                     const std::string& dtype = "float32") const;
  // The rank counts fitted for (benchmark, level, dtype), ascending.
  std::vector<int> fitted_ranks(const std::string& benchmark, const std::string& level,
                                const std::string& dtype) const;
  // The pingpong fit of a level that serves as the link of the algorithm view.
  const CommFit* link(const std::string& level) const;
};

}  // namespace sextant::model
