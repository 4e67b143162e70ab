#pragma once
// The compute part of a model file: measured roofline ceilings and a calibrated
// operator model per (family, dtype), fitted from the compute suite's results.
#include <optional>
#include <string>
#include <vector>

#include "core/h5.hpp"
#include "models/roofline.hpp"

namespace sextant::model {

// One kernel measurement as the compute suite stores it (/compute/kernels/...).
struct KernelPoint {
  std::string kernel, family, dtype, shape;
  double flops = 0, bytes = 0, seconds = 0;  // seconds: median
};

struct ComputeModel {
  Ceilings ceilings;
  std::vector<OperatorModel> operators;
  std::vector<KernelPoint> points;              // achieved points (for reports and checks)
  std::vector<std::string> violations;          // measurements faster than a ceiling
  int threads = 0;                              // threads per rank the suite measured with

  // From a results file with a /compute group; throws naming the file if it has none.
  static ComputeModel fit_results(const std::string& results_path);
  static bool has_compute(const std::string& path);  // results or model file
  // From a model file; nothing when the file has no /compute part.
  static std::optional<ComputeModel> read(const std::string& model_path);
  void write_into(h5::Group& root) const;

  const OperatorModel* find(const std::string& family, const std::string& dtype) const;
  struct Estimate {
    double seconds = 0;
    std::string bound;        // "compute" or "memory"
    bool calibrated = false;  // false: no operator model for the family, roofline bound only
  };
  Estimate predict(const std::string& family, const std::string& dtype, double flops, double bytes) const;
};

}  // namespace sextant::model
