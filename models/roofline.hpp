#pragma once
// Roofline with measured ceilings, and a calibrated operator model that predicts an
// operator's time rather than only bounding it:
//   t = max(F / (e_c * P), B / (e_m * BW(working set))) + t0
// P the measured peak FLOP/s of the precision, BW the measured bandwidth of the memory
// level the operator's working set falls in, e_c, e_m, t0 fitted per operator family
// over shapes.
#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace sextant::model {

// A bandwidth plateau of the working-set sweep: one memory level.
struct MemoryLevel {
  std::string name;                   // "L1", "L2", ..., "DRAM" (from cache sizes), else "level N"
  double lo_bytes = 0, hi_bytes = 0;  // working sets of the plateau (inclusive)
  double bandwidth = 0;               // bytes/s, median of the plateau
  std::size_t points = 0;
};

struct CurvePoint {
  double bytes = 0;      // working set
  double bandwidth = 0;  // bytes/s
};

// Piecewise-constant segmentation of log bandwidth over the working set (dynamic
// programming, BIC, at least 2 points per plateau, at most max_levels); plateaus
// whose bandwidths differ by less than min_step are merged. cache_bytes (ascending
// data-cache sizes per core) name the levels when they line up.
std::vector<MemoryLevel> detect_memory_levels(std::span<const CurvePoint> curve,
                                              std::span<const double> cache_bytes = {},
                                              std::size_t max_levels = 5, double min_step = 0.15);

struct Ceilings {
  std::map<std::string, double> peak_flops;  // per dtype, FLOP/s
  std::vector<MemoryLevel> memory;           // ascending working set
  // Bandwidth for a working set: the level that holds it, else the nearest.
  double bandwidth_for(double working_set_bytes) const;
  double peak_for(const std::string& dtype) const;  // throws naming the dtype if absent
};

struct OperatorSample {
  std::string family, dtype, shape;
  double flops = 0, bytes = 0, seconds = 0;
};

struct OperatorModel {
  std::string family, dtype;
  double e_compute = 1, e_memory = 1;  // fractions of the ceilings reached
  double t0 = 0;                       // fixed cost per call (launch, fork/join), seconds
  double median_rel_error = 0;         // over the shapes fitted
  std::size_t shapes = 0;
  double predict(const Ceilings& c, double flops, double bytes) const;
  // "compute" or "memory": which term dominates for this call.
  std::string bound(const Ceilings& c, double flops, double bytes) const;
};

// Least squares on log time (relative error), Nelder-Mead over (e_c, e_m, t0 >= 0).
OperatorModel fit_operator(const Ceilings& c, std::span<const OperatorSample> samples);

// A measurement faster than a ceiling allows is a bug in the measurement (or counts).
struct CeilingViolation {
  const OperatorSample* sample;
  std::string ceiling;  // "compute" or "memory"
  double ratio;         // achieved / ceiling (> 1)
};
std::vector<CeilingViolation> ceiling_violations(const Ceilings& c, std::span<const OperatorSample> samples,
                                                 double tolerance = 1.05);

// A kernel faster than a ceiling proves the ceiling kernel missed the hardware's peak
// (or bandwidth). Raises each such ceiling to the fastest rate a sample reached, so that
// efficiencies stay <= 1 and the model stays usable, and says what it raised: one line
// per ceiling, "<ceiling>: <old> -> <new> (<sample>)".
std::vector<std::string> raise_ceilings(Ceilings& c, std::span<const OperatorSample> samples);

}  // namespace sextant::model
