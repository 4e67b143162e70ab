#pragma once
// The compute part of a model file: measured roofline ceilings and a calibrated
// operator model per (family, dtype), fitted from the compute suite's results.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/h5.hpp"
#include "models/roofline.hpp"
#include "models/train_plan.hpp"

namespace sextant::model {

// One kernel measurement as the compute suite stores it (/compute/kernels/...).
struct KernelPoint {
  std::string kernel, family, dtype, shape;
  double flops = 0, bytes = 0, seconds = 0;  // seconds: median
};

std::string family_key(const std::string& family);

// What the compute suite measured, as fit reads it from a results file (values checked:
// one line naming the object when a number is impossible).
struct ComputeMeasurements {
  int threads = 0;                  // threads per rank (0: not recorded)
  std::vector<KernelPoint> points;  // every measured kernel shape (missing ones left out)
  std::vector<CurvePoint> sweep;    // the working-set sweep of triad (float64 if present)
  std::vector<double> caches;       // the cache sizes the OS reported
};
// Error naming the file when it has no /compute group.
ComputeMeasurements read_compute_results(const std::string& results_path);

// Held-out check of the operator models: per kernel variant with at least 4 shapes,
// fit on every other shape (by size), predict the others.
struct OperatorHoldout {
  std::string op, dtype;
  std::size_t fitted = 0, held_out = 0;
  double median_abs_error = 0, max_abs_error = 0;  // relative
};
std::vector<OperatorHoldout> operator_holdout(const std::string& results_path);
// "gemm[ta=0,tb=1]" for a shape with transposition flags, else the kernel name.
std::string variant_key(const std::string& kernel, const std::string& shape);
bool shape_contains(const std::string& whole, const std::string& part);
// The kernel registry's name for a plan's operator: a GEMM whose shape says beta=1
// (accumulating into C) is measured as "gemm_accumulate".
std::string registry_kernel(const std::string& kernel, const std::string& shape);

struct ComputeModel {
  Ceilings ceilings;
  std::vector<OperatorModel> operators;
  std::vector<KernelPoint> points;              // achieved points (for reports and checks)
  std::vector<std::string> violations;          // measurements > 5% faster than a measured ceiling
  std::vector<std::string> raised;              // ceilings raised to a faster kernel's rate (raise_ceilings)
  std::map<std::string, std::string> peak_shape;  // per dtype: the peak_fma shape that set the ceiling
  int threads = 0;                              // threads per rank the suite measured with

  // From a results file with a /compute group; throws naming the file if it has none.
  static ComputeModel fit_results(const std::string& results_path);
  // The model file's compute part (/compute under the root of a file whose schema was
  // checked): read_model_file (models/model_file.hpp) calls it.
  static ComputeModel read(const h5::Group& root);
  void write_into(h5::Group& root) const;

  // Operator models are keyed by kernel name ("layernorm_backward"), and by
  // family_key(family) for a whole registry family ("family:normalization").
  const OperatorModel* find(const std::string& op, const std::string& dtype) const;
  // Where a measurement of exactly this kernel, dtype and shape is in the file, predict()
  // returns it ("measured"); false: always the operator models.
  bool use_points = true;
  // The dense path whose GEMMs it measured: vendor when it has vendor GEMM operators (the
  // train suite measures the path its proxy runs), else portable. A configuration that
  // does not name its path is costed on this one.
  DensePath measured_dense_path() const;
  struct Estimate {
    double seconds = 0;
    std::string bound;        // "compute" or "memory"
    std::string model;        // the operator model used, "measured", or empty: roofline bound only
    bool calibrated = false;  // false: no operator model for op or family, roofline bound
  };
  // A measurement at exactly this shape (use_points), else the model of the kernel's
  // variant at this shape, else the kernel's, else its family's, else the roofline bound.
  Estimate predict(const std::string& op, const std::string& dtype, double flops, double bytes,
                   const std::string& family = "", const std::string& shape = "") const;

 private:
  std::string o_bound(const KernelPoint& p) const;
};

}  // namespace sextant::model
