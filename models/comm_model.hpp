#pragma once
// Communication models: fitted from a results file, stored in a model file, and
// queried for predictions. This is the C++ API other tools link (sextant::model).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/schema.hpp"
#include "models/hockney.hpp"

namespace sextant::model {

// One fitted operation: a benchmark at a communicator level, datatype and rank count.
struct CommFit {
  std::string benchmark, level, dtype;
  int ranks = 0;
  std::string view = "direct";      // fitted on this operation's own measurements
  bool oversubscribed = false;      // fitted on timings that are not meaningful
  double busbw_factor = 1;
  double data_bytes_per_byte = 1;   // algbw bytes per swept byte at this rank count
  PiecewiseFit fit;                 // T(bytes) with bytes the swept size unit
  double bytes_min = 0, bytes_max = 0;  // fitted range
};

struct Prediction {
  double seconds = 0, lo = 0, hi = 0;  // point estimate and interval
  double alpha_part = 0, beta_part = 0;
  double busbw = 0;                    // bytes/s
  const CommFit* from = nullptr;
  std::size_t segment = 0;
  bool extrapolated_bytes = false;     // outside the fitted size range
  bool extrapolated_ranks = false;     // rank count differs from the fitted one
  std::string note;
};

class CommModel {
 public:
  std::vector<CommFit> fits;
  Provenance source;                   // of the results the fit came from
  std::string source_file;

  // Fits every comm benchmark in a results file (schema checked).
  static CommModel fit_results(const std::string& results_path, const FitOptions& options = {});
  // Reads the comm part of a model file (schema checked).
  static CommModel read(const std::string& model_path);

  // Writes a complete model file: to a temporary name, then renamed into place.
  void write(const std::string& model_path, const Provenance& fit_provenance) const;

  // The fit for (benchmark, level, dtype) nearest in rank count to `ranks`.
  const CommFit* find(const std::string& benchmark, const std::string& level, const std::string& dtype,
                      int ranks) const;
  Prediction predict(const std::string& benchmark, double bytes, int ranks, const std::string& level = "world",
                     const std::string& dtype = "float32") const;
};

}  // namespace sextant::model
