#pragma once
// `sextant run --suite compute`: the kernels at their shapes and the working-set
// sweep, measured on every rank at once (so contention matches a training run with
// the same ranks and threads per rank), recorded by rank 0 into the results file.
#include "suites/compute/measure.hpp"

namespace sextant {
class Runtime;
class ResultsFile;
class JsonResults;
}  // namespace sextant

namespace sextant::compute {

struct SuiteOptions {
  MeasureOptions kernels;
  SweepOptions sweep;
  RetentionOptions retention;
};

// Is this a kernel of the registry (measurable by name)?
bool is_kernel(const std::string& name);

// Returns the number of kernel cases that failed validation (on any rank). Rank 0 writes
// the measurements to `results` and `json` (either may be null).
long long run_compute_suite(Runtime& rt, const SuiteOptions& options, ResultsFile* results,
                            JsonResults* json = nullptr);

}  // namespace sextant::compute
