#pragma once
// exp in plain arithmetic, so that element-wise loops around it vectorise: a libm call
// is opaque to the vectoriser and keeps GELU, softmax and cross-entropy at one scalar
// call per element (~10 ns on a 2.5 GHz core, whatever the ISA).
//
// Method (Cody-Waite): n = round(x / ln 2) by the shifter trick, r = x - n ln 2 in two
// parts (|r| <= ln 2 / 2), e^r by its Taylor polynomial (degree 13 for float64, 7 for
// float32: truncation below 0.05 ulp), times 2^n built in the exponent bits. Inputs are
// clamped to where 2^n is a normal number: below the range the result is the smallest
// normal exponent's value (~1e-308, ~1e-38) instead of a subnormal or 0, above it the
// largest finite power (~8e307, ~2e38) instead of inf; both are what a softmax
// needs. Error within the range: <= 2 ulp (tests/kernels check it against libm
// over the whole range); the serial references' bounds allow it.
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/common.hpp"

namespace sextant::kernels::fast {

// The lane type of a value the element-wise helpers below take: the value's own type
// for a scalar, the element type for a host vector (kernels/isa.hpp's Vector).
template <class V>
struct Element {
  using type = V;
};
template <class V>
  requires requires(V v) { v[0]; }
struct Element<V> {
  using type = std::remove_cvref_t<decltype(std::declval<V>()[0])>;
};
template <class V>
using element_t = typename Element<V>::type;

// Integers of the width of V's lanes, as a scalar or a vector of V's size.
template <class V, class Bits>
struct BitsOf {
  using type = Bits;
};
template <class V, class Bits>
  requires requires(V v) { v[0]; }
struct BitsOf<V, Bits> {
  typedef Bits type __attribute__((vector_size(sizeof(V))));
};

// The constants of the method per precision: where 2^n stays a normal number (for x,
// and for exp2's v), the shifter that rounds x / ln 2 into the low mantissa bits, ln 2
// in two parts (the high part exact for any n in range), the Taylor degree, and the
// exponent field's layout.
template <class Scalar>
struct ExpConstants;
template <>
struct ExpConstants<double> {
  using Bits = std::uint64_t;
  static constexpr double lo = -708.0, hi = 709.0, exp2_lo = -1022.0, exp2_hi = 1023.0;
  static constexpr double shifter = 0x1.8p52, log2e = 1.4426950408889634;
  static constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  static constexpr int degree = 13, mantissa_bits = 52, bias = 1023;
};
template <>
struct ExpConstants<float> {
  using Bits = std::uint32_t;
  static constexpr float lo = -87.0f, hi = 88.0f, exp2_lo = -126.0f, exp2_hi = 127.0f;
  static constexpr float shifter = 0x1.8p23f, log2e = 1.44269504f;
  static constexpr float ln2_hi = 0.693145751953125f, ln2_lo = 1.428606765330187045e-06f;
  static constexpr int degree = 7, mantissa_bits = 23, bias = 127;
};

// 1 / k!, rounded once in Scalar (k! is exact in Scalar for every k used here),
// evaluated at compile time.
template <class Scalar>
constexpr Scalar inverse_factorial(int k) {
  Scalar f = 1;
  for (int i = 2; i <= k; ++i) f *= Scalar(i);
  return Scalar(1) / f;
}

// The coefficient of r^k, evaluated at compile time.
template <class Scalar, Scalar (*coefficient)(int), int k>
inline constexpr Scalar coefficient_v = coefficient(k);

// Lockstep: N independent values (scalars or host vectors) through the same steps, each
// step applied to all N before the next, so that their dependency chains interleave in
// the instruction stream. An exp is a chain of ~20 dependent operations; in a loop of
// one vector per iteration the next element's chain starts a whole iteration (40-50
// instructions for GELU's derivative) later, and a core overlaps the chains only as far
// as its scheduler holds the operations still waiting: such a loop is latency-bound
// where its operation count says it could run faster (GELU and its derivative ran
// 1.1-1.4x faster in lockstep over 4 vectors, AVX2 and AVX-512). Chains one after
// another within an iteration, or GCC vectors N registers wide, recovered less of it.
// The one-value forms below are the lockstep forms at N = 1.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define SEXTANT_LOCKSTEP _Pragma("unroll")
#elif defined(__clang__)
#define SEXTANT_LOCKSTEP _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define SEXTANT_LOCKSTEP _Pragma("GCC unroll 16")
#else
#define SEXTANT_LOCKSTEP
#endif

// p = sum of coefficient(k) r^k for k = 0..D by Horner, in lockstep over N values,
// unrolled over k at compile time (a loop here is left rolled and keeps the caller's
// element loop from vectorising).
template <int N, class V, class Scalar>
KOKKOS_INLINE_FUNCTION void horner_step(V (&p)[N], const V (&r)[N], Scalar c) {
  SEXTANT_LOCKSTEP for (int n = 0; n < N; ++n) p[n] = p[n] * r[n] + c;
}
template <class Scalar, Scalar (*coefficient)(int), int D, int N, class V, int... K>
KOKKOS_INLINE_FUNCTION void horner(const V (&r)[N], V (&p)[N], std::integer_sequence<int, K...>) {
  SEXTANT_LOCKSTEP for (int n = 0; n < N; ++n)
    p[n] = r[n] * coefficient_v<Scalar, coefficient, D> + coefficient_v<Scalar, coefficient, D - 1>;
  (horner_step(p, r, coefficient_v<Scalar, coefficient, D - 2 - K>), ...);
}
template <class Scalar, Scalar (*coefficient)(int), int D, int N, class V>
KOKKOS_INLINE_FUNCTION void horner(const V (&r)[N], V (&p)[N]) {
  horner<Scalar, coefficient, D>(r, p, std::make_integer_sequence<int, D - 1>{});
}
template <class Scalar, Scalar (*coefficient)(int), int D, class V>
KOKKOS_INLINE_FUNCTION V horner(V r) {
  const V r1[1] = {r};
  V p[1];
  horner<Scalar, coefficient, D>(r1, p);
  return p[0];
}

// 2^n from kn = shifter + n (n in the low bits of kn's mantissa), built in the exponent
// field, on a scalar or lane by lane.
template <class C, class V>
KOKKOS_INLINE_FUNCTION V power_of_two(V kn) {
  using Bits = typename BitsOf<V, typename C::Bits>::type;
  Bits bits;
  std::memcpy(&bits, &kn, sizeof bits);
  bits = (bits << C::mantissa_bits) + (typename C::Bits(C::bias) << C::mantissa_bits);
  V scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return scale;
}

namespace detail {
// e^x with x clamped to [lo, hi], or only from below where the caller knows x <= 0: each
// clamp is a compare and a select per vector, and GCC turns a constant-folded upper
// clamp into a second blended path; an exp that costs ~20 vector operations per element
// is what bounds softmax and GELU, so the one it can do without is worth leaving out.
template <bool nonpositive, class V>
KOKKOS_INLINE_FUNCTION V exp(V x) {
  using Scalar = element_t<V>;
  if constexpr (std::is_same_v<Scalar, double> || std::is_same_v<Scalar, float>) {
    using C = ExpConstants<Scalar>;
    x = x < C::lo ? C::lo : x;
    if constexpr (!nonpositive) x = x > C::hi ? C::hi : x;
    const V kn = x * C::log2e + C::shifter;  // n in the low bits of kn's mantissa
    const V n = kn - C::shifter;
    const V r = (x - n * C::ln2_hi) - n * C::ln2_lo;
    return horner<Scalar, inverse_factorial<Scalar>, C::degree>(r) * power_of_two<C>(kn);
  } else {
    return static_cast<V>(exp<nonpositive>(static_cast<float>(x)));  // half types: through float
  }
}
}  // namespace detail

template <class V>
KOKKOS_INLINE_FUNCTION V exp(V x) {
  return detail::exp<false>(x);
}

// e^x for x <= 0 (a softmax's x - max): exp's values there, with one
// clamp fewer. Above exp's range (x > hi) the exponent field would overflow into garbage,
// so callers pass x <= 0 only.
template <class V>
KOKKOS_INLINE_FUNCTION V exp_nonpositive(V x) {
  return detail::exp<true>(x);
}

// 2^v on a scalar or lane by lane on a host vector, with v clamped to where 2^n is a
// normal number. For callers whose v comes out of their own arithmetic (GELU's
// -2u log2 e): v carries that arithmetic's relative rounding error, so the Cody-Waite
// split of exp's x / ln 2 buys no accuracy there, and folding log2 e into the caller's
// constants saves exp's two multiplications by ln 2 parts. f = v - n is exact; 2^f is
// e^(f ln 2) by exp's Taylor polynomial in f (coefficients (ln 2)^k / k!, the same
// truncation). Written for vectors too because GCC, given the clamps in a scalar loop,
// vectorised each clamped branch to a constant of its own and blended the results:
// several extra compares, blends and a second division per vector.
template <class Scalar>
constexpr Scalar exp2_taylor_coefficient(int k) {  // (ln 2)^k / k!, rounded once
  long double c = 1;
  for (int i = 1; i <= k; ++i) c *= 0.693147180559945309417232121458176568L / i;
  return Scalar(c);
}

namespace detail {
// 2^v in place, in lockstep over N values.
template <bool clamp, int N, class V>
KOKKOS_INLINE_FUNCTION void exp2_lockstep(V (&v)[N]) {
  using Scalar = element_t<V>;
  if constexpr (std::is_same_v<Scalar, double> || std::is_same_v<Scalar, float>) {
    using C = ExpConstants<Scalar>;
    V kn[N], f[N], p[N];
    SEXTANT_LOCKSTEP for (int n = 0; n < N; ++n) {
      if constexpr (clamp) {
        v[n] = v[n] < C::exp2_lo ? C::exp2_lo : v[n];
        v[n] = v[n] > C::exp2_hi ? C::exp2_hi : v[n];
      }
      kn[n] = v[n] + C::shifter;  // n in the low bits of kn's mantissa
      f[n] = v[n] - (kn[n] - C::shifter);
    }
    horner<Scalar, exp2_taylor_coefficient<Scalar>, C::degree>(f, p);
    SEXTANT_LOCKSTEP for (int n = 0; n < N; ++n) v[n] = p[n] * power_of_two<C>(kn[n]);
  } else {  // half types: through float
    SEXTANT_LOCKSTEP for (int n = 0; n < N; ++n) {
      float x[1] = {static_cast<float>(v[n])};
      exp2_lockstep<clamp>(x);
      v[n] = static_cast<V>(x[0]);
    }
  }
}
template <bool clamp, class V>
KOKKOS_INLINE_FUNCTION V exp2(V v) {
  V v1[1] = {v};
  exp2_lockstep<clamp>(v1);
  return v1[0];
}
}  // namespace detail

template <class V>
KOKKOS_INLINE_FUNCTION V exp2(V v) {
  return detail::exp2<true>(v);
}

// 2^v for callers that keep v within [exp2_lo, exp2_hi] of ExpConstants (their own
// clamp on an earlier value): the same values without exp2's two clamps. Outside that
// range the exponent field overflows into garbage.
template <class V>
KOKKOS_INLINE_FUNCTION V exp2_within_range(V v) {
  return detail::exp2<false>(v);
}

// The lockstep forms of exp2 and exp2_within_range, in place on N values.
namespace lockstep {
template <int N, class V>
KOKKOS_INLINE_FUNCTION void exp2(V (&v)[N]) {
  detail::exp2_lockstep<true>(v);
}
template <int N, class V>
KOKKOS_INLINE_FUNCTION void exp2_within_range(V (&v)[N]) {
  detail::exp2_lockstep<false>(v);
}
}  // namespace lockstep

}  // namespace sextant::kernels::fast
