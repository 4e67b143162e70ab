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
// largest finite power (~8e307, ~2e38) instead of inf; both are what a sigmoid or a
// softmax needs. Error within the range: <= 2 ulp (tests/kernels check it against libm
// over the whole range); the serial references' bounds allow it.
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/common.hpp"

namespace sextant::kernels::fast {

// The constants of the method per precision: where 2^n stays a normal number, the
// shifter that rounds x / ln 2 into the low mantissa bits, ln 2 in two parts (the high
// part exact for any n in range), the Taylor degree, and the exponent field's layout.
template <class Scalar>
struct ExpConstants;
template <>
struct ExpConstants<double> {
  using Bits = std::uint64_t;
  static constexpr double lo = -708.0, hi = 709.0, shifter = 0x1.8p52, log2e = 1.4426950408889634;
  static constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  static constexpr int degree = 13, mantissa_bits = 52, bias = 1023;
};
template <>
struct ExpConstants<float> {
  using Bits = std::uint32_t;
  static constexpr float lo = -87.0f, hi = 88.0f, shifter = 0x1.8p23f, log2e = 1.44269504f;
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
template <class Scalar, int K>
inline constexpr Scalar taylor_coefficient = inverse_factorial<Scalar>(K);

// sum of r^k / k! for k = 0..D by Horner, unrolled at compile time (a loop here is
// left rolled and keeps the caller's element loop from vectorising).
template <class Scalar, int D, int... K>
KOKKOS_INLINE_FUNCTION Scalar taylor_exp(Scalar r, std::integer_sequence<int, K...>) {
  Scalar p = taylor_coefficient<Scalar, D>;
  ((p = p * r + taylor_coefficient<Scalar, D - 1 - K>), ...);
  return p;
}

namespace detail {
// e^x with x clamped to [lo, hi], or only from below where the caller knows x <= 0: each
// clamp is a compare and a select per vector, and GCC turns a constant-folded upper
// clamp into a second blended path; an exp that costs ~20 vector operations per element
// is what bounds softmax and GELU, so the one it can do without is worth leaving out.
template <class Scalar, bool nonpositive>
KOKKOS_INLINE_FUNCTION Scalar exp(Scalar x) {
  if constexpr (std::is_same_v<Scalar, double> || std::is_same_v<Scalar, float>) {
    using C = ExpConstants<Scalar>;
    using Bits = typename C::Bits;
    if constexpr (nonpositive) x = x < C::lo ? C::lo : x;
    else x = x < C::lo ? C::lo : (x > C::hi ? C::hi : x);
    const Scalar kn = x * C::log2e + C::shifter;  // n in the low bits of kn's mantissa
    const Scalar n = kn - C::shifter;
    const Scalar r = (x - n * C::ln2_hi) - n * C::ln2_lo;
    const Scalar p = taylor_exp<Scalar, C::degree>(r, std::make_integer_sequence<int, C::degree>{});
    Bits bits;
    std::memcpy(&bits, &kn, sizeof bits);
    bits = (bits << C::mantissa_bits) + (Bits(C::bias) << C::mantissa_bits);  // n into the exponent
    Scalar scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return p * scale;
  } else {
    return static_cast<Scalar>(exp<float, nonpositive>(static_cast<float>(x)));  // half types: through float
  }
}
}  // namespace detail

template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar exp(Scalar x) {
  return detail::exp<Scalar, false>(x);
}

// e^x for x <= 0 (a softmax's x - max, a sigmoid's -|t|): exp's values there, with one
// clamp fewer. Above exp's range (x > hi) the exponent field would overflow into garbage,
// so callers pass x <= 0 only.
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar exp_nonpositive(Scalar x) {
  return detail::exp<Scalar, true>(x);
}

// The logistic function 1 / (1 + e^-t), from e^-|t| (never overflows) and one division.
// Written with exp's argument never above 0, the compiler's vector code has no branch
// for the upper clamp: with 1 / (1 + exp(-t)) GCC emitted that branch with a division of
// its own, and a vector division is the slowest operation of a GELU (16 cycles per 8
// float64 lanes on an AVX-512 core).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar sigmoid(Scalar t) {
  const Scalar e = exp_nonpositive(t < Scalar(0) ? t : -t);
  return (t < Scalar(0) ? e : Scalar(1)) / (Scalar(1) + e);
}

}  // namespace sextant::kernels::fast
