#pragma once
// The compute part of a model file: measured roofline ceilings and a calibrated
// operator model per (family, dtype), fitted from the compute suite's results.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/h5.hpp"
#include "models/cache_state.hpp"
#include "models/roofline.hpp"
#include "models/train_plan.hpp"

namespace sextant::model {

// One kernel measurement as the compute suite stores it (/compute/kernels/...).
struct KernelPoint {
  std::string kernel, family, dtype, shape;
  double flops = 0, bytes = 0, seconds = 0;  // seconds: median
  double flush_bytes = 0;  // streamed through the caches before each run (0: run back to back, hot)
};

std::string family_key(const std::string& family);

// What the compute suite measured, as fit reads it from a results file (values checked:
// one line naming the object when a number is impossible).
struct ComputeMeasurements {
  int threads = 0;                  // threads per rank (0: not recorded)
  std::vector<KernelPoint> points;  // every measured kernel shape (missing ones left out)
  std::vector<CurvePoint> sweep;    // the working-set sweep of triad (float64 if present)
  std::vector<double> caches;       // the cache sizes the OS reported
  CacheRetention retention;         // the retention probe (empty when not run)
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
  std::vector<OperatorModel> operators;      // fitted on each shape's most flushed measurement
  std::vector<OperatorModel> hot_operators;  // on the hot twins the train suite measured (else empty)
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

  // A shape measured both hot (back to back) and cold (after the largest flush), and
  // warm where a smaller flush was measured too: the train suite measures its plan's
  // kernels so, and the step predictor costs each call between them by the cache state
  // the step leaves it (models/cache_state.hpp). Where a shape was measured once, or
  // several times, predict() answers with the most flushed one. Without the
  // measurements (use_points false), the hot and cold operator model sets answer.
  struct CacheBounds {
    double hot = 0, cold = 0;
    std::optional<double> warm;
    double miss_seconds_per_byte = 0;
    // The cost of a call that meets its operands as the walk found them.
    double in_step(const OperandMisses& m) const;
  };
  std::optional<CacheBounds> cache_bounds(const std::string& op, const std::string& dtype, const std::string& shape,
                                          double flops = 0, double bytes = 0, const std::string& family = "") const;
  bool has_cache_bounds() const;
  // What a rank keeps of its data at a reuse distance: the retention probe's curve where
  // the compute suite ran it, else a ramp (linear in log distance) from the largest
  // working set of the sweep's last cache level (all kept) to the smallest of its memory
  // level (none); none when the sweep found no memory level.
  CacheRetention retention;  // measured; empty when the probe did not run
  std::optional<CacheRetention> cache_retention() const;
  // The measurement of this registry kernel, dtype and shape with the largest flush, if any.
  const KernelPoint* measured(const std::string& kernel, const std::string& dtype, const std::string& shape) const;

 private:
  std::string o_bound(const KernelPoint& p) const;
  // The operator model of a set for this op: its variant's, its kernel's, its family's.
  const OperatorModel* lookup(const std::vector<OperatorModel>& set, const std::string& op, const std::string& dtype,
                              const std::string& family, const std::string& shape) const;
};

}  // namespace sextant::model
