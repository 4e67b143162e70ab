#pragma once
// Serial references: the STREAM kernels, sum, the peak-FMA recurrence, GEMM.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/reference/bounds.hpp"

namespace sextant::kernels::reference {

// Element-wise results of one rounding per operation (copy 0, scale 1, add 1, triad 2).
inline Bounded elementwise(const std::vector<double>& value, const std::vector<double>& magnitude,
                           int operations, double u) {
  Bounded r;
  r.value = value;
  r.bound.resize(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) r.bound[i] = 2 * gamma(operations, u) * magnitude[i];
  return r;
}

inline Bounded stream_copy(const std::vector<double>& a, double u) {
  return elementwise(a, a, 0, u);
}

inline Bounded stream_scale(const std::vector<double>& c, double q, double u) {
  std::vector<double> v(c.size()), m(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) v[i] = q * c[i], m[i] = std::abs(v[i]);
  return elementwise(v, m, 1, u);
}

inline Bounded stream_add(const std::vector<double>& a, const std::vector<double>& b, double u) {
  std::vector<double> v(a.size()), m(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) v[i] = a[i] + b[i], m[i] = std::abs(a[i]) + std::abs(b[i]);
  return elementwise(v, m, 1, u);
}

inline Bounded stream_triad(const std::vector<double>& b, const std::vector<double>& c, double q,
                            double u) {
  std::vector<double> v(b.size()), m(b.size());
  for (std::size_t i = 0; i < b.size(); ++i)
    v[i] = b[i] + q * c[i], m[i] = std::abs(b[i]) + std::abs(q * c[i]);
  return elementwise(v, m, 2, u);
}

inline Bounded dot(const std::vector<double>& a, const std::vector<double>& b, double u) {
  Bounded r;
  r.resize(1);
  double mag = 0;
  for (std::size_t i = 0; i < a.size(); ++i) r.value[0] += a[i] * b[i], mag += std::abs(a[i] * b[i]);
  r.bound[0] = 2 * gamma(double(a.size()), u) * mag;
  return r;
}

inline Bounded sum(const std::vector<double>& x, double u) {
  Bounded r;
  r.resize(1);
  double mag = 0;
  for (double v : x) r.value[0] += v, mag += std::abs(v);
  r.bound[0] = 2 * gamma(double(x.size()), u) * mag;
  return r;
}

// out(i) = sum over chains of x <- x a + b after reps steps, x starting at start(i, j).
// A step's rounding errors are damped by a < 1 at every later step, so the error of a
// chain is at most 2 u max|x| min(reps, 1 / (1 - a)) (two roundings a step, or one FMA).
template <class Start>
Bounded peak_fma(std::int64_t items, int chains, int reps, double a, double b, Start start, double u) {
  Bounded r;
  r.resize(std::size_t(items));
  const double steps = std::min<double>(reps, 1.0 / (1.0 - a)) + 1;
  for (std::int64_t i = 0; i < items; ++i) {
    double sum = 0, mag = 0, chain_err = 0;
    for (int j = 0; j < chains; ++j) {
      double x = start(i, j), xmax = std::abs(x);
      for (int s = 0; s < reps; ++s) x = x * a + b, xmax = std::max(xmax, std::abs(x));
      sum += x;
      mag += std::abs(x);
      chain_err += 2 * u * xmax * steps;
    }
    r.value[i] = sum;
    r.bound[i] = 2 * (chain_err + gamma(chains, u) * mag);
  }
  return r;
}

// C = alpha op(A) op(B) + beta C for each of `batch` entries (row-major, flat), on the
// listed rows of C (all rows when empty). Bound: 2 gamma(K + 3) (|alpha| sum_k |a||b| +
// |beta c|): any order of the K products' sum, plus the alpha and beta steps.
inline Bounded gemm(std::int64_t batch, std::int64_t M, std::int64_t N, std::int64_t K, bool ta,
                    bool tb, double alpha, const std::vector<double>& A, const std::vector<double>& B,
                    double beta, const std::vector<double>& C, double u,
                    std::vector<std::int64_t> rows = {}) {
  if (rows.empty())
    for (std::int64_t i = 0; i < M; ++i) rows.push_back(i);
  Bounded r;
  r.resize(std::size_t(batch) * rows.size() * N);
  r.index.resize(r.value.size());
  const double g = gamma(double(K + 3), u);
  std::vector<double> acc(N), mag(N);
  std::size_t out = 0;
  for (std::int64_t bt = 0; bt < batch; ++bt) {
    const double* a = A.data() + bt * M * K;
    const double* bm = B.data() + bt * K * N;
    for (std::int64_t i : rows) {
      std::fill(acc.begin(), acc.end(), 0.0);
      std::fill(mag.begin(), mag.end(), 0.0);
      for (std::int64_t k = 0; k < K; ++k) {
        const double av = ta ? a[k * M + i] : a[i * K + k];
        for (std::int64_t j = 0; j < N; ++j) {
          const double bv = tb ? bm[j * K + k] : bm[k * N + j];
          acc[j] += av * bv;
          mag[j] += std::abs(av * bv);
        }
      }
      for (std::int64_t j = 0; j < N; ++j, ++out) {
        const std::size_t flat = std::size_t((bt * M + i) * N + j);
        const double c = beta != 0 ? C[flat] : 0.0;
        r.index[out] = flat;
        r.value[out] = alpha * acc[j] + beta * c;
        r.bound[out] = 2 * g * (std::abs(alpha) * mag[j] + std::abs(beta * c));
      }
    }
  }
  return r;
}

}  // namespace sextant::kernels::reference
