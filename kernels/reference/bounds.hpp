#pragma once
// What a serial reference returns: values computed in double from the kernel's exact
// inputs, and for each value a bound on |kernel result - value| for a kernel computing
// in a precision with unit roundoff u (2^-53 float64, 2^-24 float32).
//
// The bounds are the standard forward-error bounds (Higham, Accuracy and Stability of
// Numerical Algorithms, ch. 3): a sum or dot product of k terms, in any order, is within
// gamma(k) * sum |terms| with gamma(k) = k u / (1 - k u); element-wise formulas add a few
// u per operation plus the propagated input error times the derivative. Every bound is
// doubled: the reference rounds too (in double), which matters when the kernel is float64.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace sextant::kernels::reference {

template <class Scalar>
constexpr double unit_roundoff() {
  return std::numeric_limits<Scalar>::epsilon() / 2;
}

// gamma(k); capped at 1 where k u >= 1/2 (huge sums in low precision), where the bound
// only says "no worse than the magnitude" and no longer certifies digits.
inline double gamma(double k, double u) {
  const double ku = k * u;
  return ku < 0.5 ? ku / (1 - ku) : 1.0;
}

struct Bounded {
  std::vector<std::size_t> index;  // flat output indices compared; empty: all, in order
  std::vector<double> value, bound;

  void resize(std::size_t n) {
    value.assign(n, 0.0);
    bound.assign(n, 0.0);
  }
  std::size_t size() const { return value.size(); }
  std::size_t flat_index(std::size_t k) const { return index.empty() ? k : index[k]; }
};

// Evenly spread rows [0, rows) (always the first and the last) so that about `budget`
// units of work are checked when each row costs `row_cost`: the O(n^3) references stay
// fast on large shapes, while every element is still checked for being written.
inline std::vector<std::int64_t> sample_rows(std::int64_t rows, double row_cost, double budget) {
  std::vector<std::int64_t> out;
  if (rows <= 0) return out;
  std::int64_t want = row_cost * rows <= budget ? rows : std::int64_t(budget / std::max(row_cost, 1.0));
  if (want < 2) want = 2;
  if (want >= rows) {
    for (std::int64_t i = 0; i < rows; ++i) out.push_back(i);
    return out;
  }
  for (std::int64_t s = 0; s < want; ++s) {
    std::int64_t i = (rows - 1) * s / (want - 1);
    if (out.empty() || out.back() != i) out.push_back(i);
  }
  return out;
}

}  // namespace sextant::kernels::reference
