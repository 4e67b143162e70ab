#pragma once
// `sextant run --suite train`, whole: it measures what its predictions need in the same
// run, with the same ranks and threads per rank (the collectives and point-to-point
// traffic of the strategies, the kernels of the plans at their shapes and cache state),
// fits them into <results>.model.h5, predicts and measures every configuration of the
// sweep (suites/train/suite.hpp), and measures the kernels once more (the operator
// drift). The CLI parses options into these structs and calls it.
#include <memory>
#include <string>
#include <vector>

#include "suites/comm/harness.hpp"
#include "suites/compute/suite.hpp"

namespace sextant {
class Runtime;
class ResultsFile;
class JsonResults;
}  // namespace sextant

namespace sextant::train {

struct PipelineOptions {
  std::vector<std::string> model_sizes;  // empty: small and medium with quick, all three without
  std::vector<std::string> configs;      // empty: every configuration of the sweep
  std::string dense;                     // portable | vendor; empty: the proxy's default
  std::string recompute;                 // none | selective | full for every configuration; empty: none
  std::string train;                     // one configuration, as `predict --train` takes it, instead of the sweep
  bool quick = false;
  int steps = 0;                   // > 0: exactly this many measured steps per configuration
  bool comm_sizes_given = false;   // false: the comm suite measures 4 B .. 4 MiB
};

// Collective over MPI_COMM_WORLD. `results` (rank 0's; null elsewhere) is closed for the
// fit and reopened; comm and compute are the suites' options as the user gave them,
// completed here with what the plans need. A bad size or configuration name is a
// UsageError before anything is measured.
comm::Outcome run_train_pipeline(Runtime& rt, const PipelineOptions& options, comm::Options comm,
                                 compute::SuiteOptions compute, const std::string& results_path,
                                 std::unique_ptr<ResultsFile>& results, JsonResults* json);

}  // namespace sextant::train
