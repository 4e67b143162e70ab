// fast::exp (kernels/fast_math.hpp) against libm's exp over its whole range: the
// kernels' serial references bound transcendental errors by a few ulp, so the
// approximation must stay within 2 ulp (it is < 1.1 by construction: truncation below
// 0.05 ulp plus the rounding of a Horner polynomial), and clamp, never overflow or
// wrap, outside the range.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/fast_math.hpp"
#include "kernels/isa.hpp"

namespace {

template <class T>
double ulps(T got, T want) {
  return std::fabs(double(got) - double(want)) / double(std::nextafter(want, std::numeric_limits<T>::infinity()) - want);
}

template <class T, class Exp>
double worst_ulps(double lo, double hi, double step, Exp exp) {
  double worst = 0;
  for (double x = lo; x <= hi; x += step) {
    const T t = T(x);
    worst = std::max(worst, ulps(exp(t), std::exp(t)));
  }
  return worst;
}
template <class T>
double worst_ulps(double lo, double hi, double step) {
  return worst_ulps<T>(lo, hi, step, [](T t) { return sextant::kernels::fast::exp(t); });
}

TEST(FastExp, Float64WithinTwoUlpOverItsRange) {
  EXPECT_LE(worst_ulps<double>(-708.0, 709.0, 0.00037), 2.0);
  EXPECT_LE(worst_ulps<double>(-1.0, 1.0, 1e-6), 2.0);  // near 0, where softmax and sigmoid live
}

TEST(FastExp, Float32WithinTwoUlpOverItsRange) {
  EXPECT_LE(worst_ulps<float>(-87.0, 88.0, 0.0001), 2.0);
  EXPECT_LE(worst_ulps<float>(-1.0, 1.0, 1e-6), 2.0);
}

// The one-sided variant (softmax, sigmoid) gives exp's values wherever x <= 0 and clamps
// below the range the same way.
TEST(FastExp, NonpositiveVariantEqualsExpBelowZero) {
  using sextant::kernels::fast::exp_nonpositive;
  EXPECT_LE(worst_ulps<double>(-708.0, 0.0, 0.00037, [](double t) { return exp_nonpositive(t); }), 2.0);
  EXPECT_LE(worst_ulps<float>(-87.0, 0.0, 0.0001, [](float t) { return exp_nonpositive(t); }), 2.0);
  for (double x : {-1e300, -1000.0, -709.0, -700.5, -3.25, -1e-9, 0.0})
    EXPECT_EQ(exp_nonpositive(x), sextant::kernels::fast::exp(x)) << x;
  for (float x : {-1e30f, -200.0f, -88.0f, -80.5f, -3.25f, -1e-9f, 0.0f})
    EXPECT_EQ(exp_nonpositive(x), sextant::kernels::fast::exp(x)) << x;
  EXPECT_TRUE(std::isnan(exp_nonpositive(std::nan(""))));
}

TEST(FastExp, ClampsOutsideTheRange) {
  using sextant::kernels::fast::exp;
  for (double x : {-1e300, -1000.0, -709.0}) {
    EXPECT_GT(exp(x), 0.0) << x;
    EXPECT_LE(exp(x), std::exp(-707.0)) << x;
  }
  for (double x : {710.0, 1000.0, 1e300}) {
    EXPECT_TRUE(std::isfinite(exp(x))) << x;
    EXPECT_GE(exp(x), std::exp(708.0)) << x;
  }
  for (float x : {-1e30f, -200.0f, -88.0f}) {
    EXPECT_GT(exp(x), 0.0f) << x;
    EXPECT_LE(exp(x), std::exp(-86.0f)) << x;
  }
  for (float x : {89.0f, 200.0f, 1e30f}) {
    EXPECT_TRUE(std::isfinite(exp(x))) << x;
    EXPECT_GE(exp(x), std::exp(87.0f)) << x;
  }
  EXPECT_TRUE(std::isnan(exp(std::nan(""))));
}

// exp2, the base-2 variant GELU takes its exponential from: within 2 ulp of libm's exp2
// over the range where 2^v is a normal number, clamped outside it, and the same values
// lane by lane on a host vector as on scalars.
TEST(FastExp2, WithinTwoUlpOverItsRangeAndClamped) {
  using sextant::kernels::fast::exp2;
  auto worst = [](auto zero, double lo, double hi, double step) {
    using T = decltype(zero);
    double w = 0;
    for (double v = lo; v <= hi; v += step) w = std::max(w, ulps(exp2(T(v)), std::exp2(T(v))));
    return w;
  };
  EXPECT_LE(worst(0.0, -1022.0, 1023.0, 0.00053), 2.0);
  EXPECT_LE(worst(0.0f, -126.0, 127.0, 0.00013), 2.0);
  EXPECT_LE(worst(0.0f, -1.0, 1.0, 1e-6), 2.0);
  for (float v : {-1e30f, -200.0f, -127.0f}) EXPECT_LE(exp2(v), std::exp2(-125.0f)) << v;
  for (float v : {128.0f, 200.0f, 1e30f}) {
    EXPECT_TRUE(std::isfinite(exp2(v))) << v;
    EXPECT_GE(exp2(v), std::exp2(126.0f)) << v;
  }
  for (double v : {-1e300, -2000.0}) EXPECT_LE(exp2(v), std::exp2(-1021.0)) << v;
  for (double v : {1024.5, 1e300}) EXPECT_TRUE(std::isfinite(exp2(v))) << v;
}

#ifdef SEXTANT_HOST_VECTORS
TEST(FastExp2, HostVectorsEqualScalars) {
  using sextant::kernels::fast::exp2;
  using V = sextant::kernels::isa::Vector<float>::type;
  constexpr int W = sizeof(V) / sizeof(float);
  for (float start : {-300.0f, -126.5f, -3.1f, 0.0f, 126.2f}) {
    V v;
    for (int l = 0; l < W; ++l) v[l] = start + 0.37f * float(l);
    const V e = exp2(v);
    for (int l = 0; l < W; ++l) EXPECT_EQ(e[l], exp2(float(v[l]))) << v[l];
  }
}
#endif

}  // namespace
