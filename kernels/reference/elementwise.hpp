#pragma once
// Serial references: bias + GELU, ReLU, embedding gather and scatter-add, AdamW.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/activation.hpp"
#include "kernels/adamw.hpp"
#include "kernels/reference/bounds.hpp"

namespace sextant::kernels::reference {

namespace gelu_detail {
constexpr double c = Gelu::sqrt_2_over_pi, a = Gelu::cubic;
// Bound on the kernel's error in t = tanh(u(z)): the argument's ~4 roundings through
// tanh' <= 1, plus tanh's own few ulps.
inline double tanh_error(double z, double u) {
  return 4 * u * std::abs(c * (z + a * z * z * z)) + 4 * u;
}
}  // namespace gelu_detail

// y = gelu(x + b_j). Bound: z = x + b has error u |z|, gelu' <= 1.13; the formula's
// roundings (~6 u |y|) and t's error times 0.5 |z|.
inline Bounded bias_gelu_forward(std::int64_t rows, std::int64_t cols, const std::vector<double>& x,
                                 const std::vector<double>& bias, double u) {
  using namespace gelu_detail;
  Bounded r;
  r.resize(std::size_t(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t e = std::size_t(i * cols + j);
      const double z = x[e] + bias[j];
      const double y = 0.5 * z * (1 + std::tanh(c * (z + a * z * z * z)));
      r.value[e] = y;
      r.bound[e] = 2 * (1.13 * u * std::abs(z) + 0.5 * std::abs(z) * tanh_error(z, u) +
                        gamma(6, u) * (std::abs(y) + std::abs(z)));
    }
  return r;
}

// dx = dy gelu'(z), db_j = sum_i dx_ij; outputs {dx, db}.
inline std::vector<Bounded> bias_gelu_backward(std::int64_t rows, std::int64_t cols,
                                               const std::vector<double>& dy,
                                               const std::vector<double>& x,
                                               const std::vector<double>& bias, double u) {
  using namespace gelu_detail;
  Bounded dx, db;
  dx.resize(std::size_t(rows * cols));
  db.resize(std::size_t(cols));
  std::vector<double> db_mag(cols, 0.0), db_err(cols, 0.0);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t e = std::size_t(i * cols + j);
      const double z = x[e] + bias[j], z2 = z * z;
      const double t = std::tanh(c * z * (1 + a * z2));
      const double poly = c * (1 + 3 * a * z2);
      const double d = 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * poly;
      // Sum of the derivative formula's term magnitudes, its sensitivity to t, to z.
      const double terms = 0.5 * (1 + std::abs(t)) + 0.5 * std::abs(z) * (1 + t * t) * poly;
      const double dt = 0.5 + std::abs(z * t) * poly;
      const double dz = 1.0 + 3 * std::abs(z) * poly;  // generous bound on |gelu''|
      const double err = std::abs(dy[e]) * (gamma(12, u) * terms + tanh_error(z, u) * dt +
                                            u * std::abs(z) * dz) +
                         u * std::abs(dy[e] * d);
      dx.value[e] = dy[e] * d;
      dx.bound[e] = 2 * err;
      db.value[j] += dy[e] * d;
      db_mag[j] += std::abs(dy[e] * d);
      db_err[j] += err;
    }
  for (std::int64_t j = 0; j < cols; ++j) db.bound[j] = 2 * (db_err[j] + gamma(double(rows), u) * db_mag[j]);
  return {dx, db};
}

// Exact: a copy or a zero.
inline Bounded relu_forward(const std::vector<double>& x) {
  Bounded r;
  r.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) r.value[i] = x[i] > 0 ? x[i] : 0.0;
  return r;
}

inline Bounded relu_backward(const std::vector<double>& dy, const std::vector<double>& x) {
  Bounded r;
  r.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) r.value[i] = x[i] > 0 ? dy[i] : 0.0;
  return r;
}

// Exact gather.
inline Bounded embedding_forward(std::int64_t dim, const std::vector<double>& table,
                                 const std::vector<std::int64_t>& index) {
  Bounded r;
  r.resize(index.size() * dim);
  for (std::size_t t = 0; t < index.size(); ++t)
    for (std::int64_t d = 0; d < dim; ++d) r.value[t * dim + d] = table[index[t] * dim + d];
  return r;
}

// dtable(v, :) = sum of dout(t, :) over t with index t = v: bound 2 gamma(count) sum |dout|.
inline Bounded embedding_backward(std::int64_t vocab, std::int64_t dim, const std::vector<double>& dout,
                                  const std::vector<std::int64_t>& index, double u) {
  Bounded r;
  r.resize(std::size_t(vocab * dim));
  std::vector<double> mag(r.size(), 0.0);
  std::vector<std::int64_t> count(vocab, 0);
  for (std::size_t t = 0; t < index.size(); ++t) {
    ++count[index[t]];
    for (std::int64_t d = 0; d < dim; ++d) {
      r.value[index[t] * dim + d] += dout[t * dim + d];
      mag[index[t] * dim + d] += std::abs(dout[t * dim + d]);
    }
  }
  for (std::int64_t v = 0; v < vocab; ++v)
    for (std::int64_t d = 0; d < dim; ++d)
      r.bound[v * dim + d] = 2 * gamma(double(count[v]), u) * mag[v * dim + d];
  return r;
}

// One AdamW step; outputs {param, m, v}. The moments' bounds follow from their few
// roundings (constants rounded to the kernel's precision included); the parameter's
// from its own roundings plus the moments' errors through m / (sqrt(v) + eps).
inline std::vector<Bounded> adamw(const std::vector<double>& p, const std::vector<double>& g,
                                  const std::vector<double>& m, const std::vector<double>& v,
                                  const AdamWParams& hp, double u) {
  Bounded P, Mo, Vo;
  P.resize(p.size());
  Mo.resize(p.size());
  Vo.resize(p.size());
  const double corr1 = 1 / (1 - std::pow(hp.beta1, hp.step)), corr2 = 1 / (1 - std::pow(hp.beta2, hp.step));
  const double decay = hp.lr * hp.weight_decay;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double mi = hp.beta1 * m[i] + (1 - hp.beta1) * g[i];
    const double vi = hp.beta2 * v[i] + (1 - hp.beta2) * g[i] * g[i];
    const double dm = gamma(4, u) * (std::abs(hp.beta1 * m[i]) + std::abs((1 - hp.beta1) * g[i]));
    const double dv = gamma(5, u) * (std::abs(hp.beta2 * v[i]) + (1 - hp.beta2) * g[i] * g[i]);
    const double den = std::sqrt(vi * corr2) + hp.eps;
    const double ratio = mi * corr1 / den;
    const double pi = p[i] - hp.lr * ratio - decay * p[i];
    const double dp = gamma(4, u) * (std::abs(p[i]) + std::abs(hp.lr * ratio) + std::abs(decay * p[i])) +
                      hp.lr * (dm * corr1 / den + std::abs(ratio) * (dv / (2 * vi) + gamma(6, u)));
    Mo.value[i] = mi, Mo.bound[i] = 2 * dm;
    Vo.value[i] = vi, Vo.bound[i] = 2 * dv;
    P.value[i] = pi, P.bound[i] = 2 * dp;
  }
  return {P, Mo, Vo};
}

}  // namespace sextant::kernels::reference
