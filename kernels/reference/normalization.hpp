#pragma once
// Serial references: row softmax and layer normalisation, forward and backward.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/reference/bounds.hpp"

namespace sextant::kernels::reference {

// Row-wise softmax. Relative bound per element: x - m rounds (u |x - m|, amplified by
// exp into a relative error), exp's own ulps, the row sum gamma(cols), the scaling.
inline Bounded softmax_forward(std::int64_t rows, std::int64_t cols, const std::vector<double>& x,
                               double u) {
  Bounded r;
  r.resize(std::size_t(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i) {
    const double* xi = x.data() + i * cols;
    const double m = *std::max_element(xi, xi + cols);
    double sum = 0, spread = 0;
    for (std::int64_t j = 0; j < cols; ++j) sum += std::exp(xi[j] - m), spread = std::max(spread, m - xi[j]);
    for (std::int64_t j = 0; j < cols; ++j) {
      const double y = std::exp(xi[j] - m) / sum;
      r.value[i * cols + j] = y;
      r.bound[i * cols + j] = 2 * y * (gamma(double(cols + 8), u) + u * (m - xi[j] + spread));
    }
  }
  return r;
}

// dx = y (dy - sum_k y_k dy_k): the dot's gamma(cols) sum |y dy| and two roundings.
inline Bounded softmax_backward(std::int64_t rows, std::int64_t cols, const std::vector<double>& y,
                                const std::vector<double>& dy, double u) {
  Bounded r;
  r.resize(std::size_t(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i) {
    double s = 0, mag = 0;
    for (std::int64_t j = 0; j < cols; ++j) s += y[i * cols + j] * dy[i * cols + j], mag += std::abs(y[i * cols + j] * dy[i * cols + j]);
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t e = std::size_t(i * cols + j);
      r.value[e] = y[e] * (dy[e] - s);
      r.bound[e] = 2 * std::abs(y[e]) * (gamma(double(cols + 1), u) * mag + gamma(2, u) * (std::abs(dy[e]) + std::abs(s)));
    }
  }
  return r;
}

// Layer norm forward; outputs {y, mean, rstd}. With dmu = gamma(n + 1) mean|x| the error
// of the computed mean, rstd's relative error is at most dmu / std + gamma(n + 4)
// (two-pass variance, sqrt, reciprocal), and y's follows from both.
inline std::vector<Bounded> layernorm_forward(std::int64_t rows, std::int64_t cols,
                                              const std::vector<double>& x,
                                              const std::vector<double>& gamma_,
                                              const std::vector<double>& beta, double eps, double u) {
  Bounded y, mean, rstd;
  y.resize(std::size_t(rows * cols));
  mean.resize(std::size_t(rows));
  rstd.resize(std::size_t(rows));
  const double n = double(cols);
  for (std::int64_t i = 0; i < rows; ++i) {
    const double* xi = x.data() + i * cols;
    double s = 0, abs_mean = 0;
    for (std::int64_t j = 0; j < cols; ++j) s += xi[j], abs_mean += std::abs(xi[j]);
    const double mu = s / n;
    abs_mean /= n;
    double sq = 0;
    for (std::int64_t j = 0; j < cols; ++j) sq += (xi[j] - mu) * (xi[j] - mu);
    const double var = sq / n, r = 1 / std::sqrt(var + eps);
    const double dmu = gamma(n + 1, u) * abs_mean;
    const double er = dmu / std::sqrt(var) + gamma(n + 4, u);
    mean.value[i] = mu, mean.bound[i] = 2 * dmu;
    rstd.value[i] = r, rstd.bound[i] = 2 * r * er;
    for (std::int64_t j = 0; j < cols; ++j) {
      const double d = xi[j] - mu, v = d * r * gamma_[j] + beta[j];
      y.value[i * cols + j] = v;
      y.bound[i * cols + j] = 2 * (std::abs(gamma_[j]) * r * (dmu + u * std::abs(d)) +
                                   std::abs(gamma_[j] * r * d) * (er + 3 * u) + gamma(2, u) * (std::abs(v) + std::abs(beta[j])));
    }
  }
  return {y, mean, rstd};
}

// Layer norm backward from the saved mean and rstd (exact inputs); outputs
// {dx, dgamma, dbeta}.
inline std::vector<Bounded> layernorm_backward(std::int64_t rows, std::int64_t cols,
                                               const std::vector<double>& dy,
                                               const std::vector<double>& x,
                                               const std::vector<double>& gamma_,
                                               const std::vector<double>& mean,
                                               const std::vector<double>& rstd, double u) {
  Bounded dx, dg, db;
  dx.resize(std::size_t(rows * cols));
  dg.resize(std::size_t(cols));
  db.resize(std::size_t(cols));
  std::vector<double> dg_mag(cols, 0.0), db_mag(cols, 0.0);
  const double n = double(cols);
  for (std::int64_t i = 0; i < rows; ++i) {
    const double mu = mean[i], r = rstd[i];
    double sg = 0, sgx = 0, mg = 0, mgx = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t e = std::size_t(i * cols + j);
      const double xh = (x[e] - mu) * r, g = dy[e] * gamma_[j];
      sg += g, sgx += g * xh, mg += std::abs(g), mgx += std::abs(g * xh);
      dg.value[j] += dy[e] * xh, dg_mag[j] += std::abs(dy[e] * xh);
      db.value[j] += dy[e], db_mag[j] += std::abs(dy[e]);
    }
    const double a = sg / n, b = sgx / n;
    const double da = gamma(n + 2, u) * mg / n, dbb = gamma(n + 5, u) * mgx / n;
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t e = std::size_t(i * cols + j);
      const double xh = (x[e] - mu) * r, g = dy[e] * gamma_[j];
      dx.value[e] = r * (g - a - xh * b);
      dx.bound[e] = 2 * r * (u * std::abs(g) + da + std::abs(xh) * dbb + 2 * u * std::abs(xh * b) +
                             gamma(4, u) * (std::abs(g) + std::abs(a) + std::abs(xh * b)));
    }
  }
  for (std::int64_t j = 0; j < cols; ++j) {
    dg.bound[j] = 2 * gamma(double(rows + 4), u) * dg_mag[j];
    db.bound[j] = 2 * gamma(double(rows), u) * db_mag[j];
  }
  return {dx, dg, db};
}

}  // namespace sextant::kernels::reference
