// bfloat16 conversions (core/bfloat16.hpp) against their definition: the upper 16 bits
// of a float32, rounded to nearest with ties to even.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "core/bfloat16.hpp"

using namespace sextant;

namespace {
float round_trip(float x) { return bf16::to_float(bf16::from_float(x)); }
}  // namespace

TEST(Bfloat16, ValuesWithEightSignificantBitsAreExact) {
  for (float x : {0.0f, -0.0f, 1.0f, -2.5f, 0.15625f, 65280.0f, 1.0f + 0x1.0p-7f, 0x1.0p-126f, 0x1.0p-133f})
    EXPECT_EQ(round_trip(x), x) << x;
  EXPECT_TRUE(std::signbit(round_trip(-0.0f)));
}

TEST(Bfloat16, HalfwayRoundsToEven) {
  // The spacing at 1 is 2^-7: 1 + 2^-8 lies halfway between 1 (even) and 1 + 2^-7 (odd),
  // 1 + 3 2^-8 between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(round_trip(1.0f + 0x1.0p-8f), 1.0f);
  EXPECT_EQ(round_trip(1.0f + 3 * 0x1.0p-8f), 1.0f + 0x1.0p-6f);
  EXPECT_EQ(round_trip(1.0f + 0x1.0p-8f + 0x1.0p-20f), 1.0f + 0x1.0p-7f);
  EXPECT_EQ(round_trip(-(1.0f + 0x1.0p-8f)), -1.0f);
}

TEST(Bfloat16, NanStaysNanAndInfinityStaysInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(round_trip(std::numeric_limits<float>::quiet_NaN())));
  std::uint32_t low_payload = 0x7f800001u;  // a NaN whose payload lies in the dropped bits only
  float nan;
  std::memcpy(&nan, &low_payload, sizeof nan);
  EXPECT_TRUE(std::isnan(round_trip(nan)));
  EXPECT_EQ(round_trip(inf), inf);
  EXPECT_EQ(round_trip(-inf), -inf);
  EXPECT_EQ(round_trip(std::numeric_limits<float>::max()), inf);  // beyond bfloat16's largest + half its spacing
}

TEST(Bfloat16, EveryValueGoesToTheNearerNeighbour) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> bits(0, 0x7f7fffffu);  // finite, positive
  for (int i = 0; i < 100000; ++i) {
    const std::uint32_t b = bits(rng);
    float x, below, above;
    std::memcpy(&x, &b, sizeof x);
    const std::uint32_t down = b & 0xffff0000u, up = down + 0x10000u;
    std::memcpy(&below, &down, sizeof below);
    std::memcpy(&above, &up, sizeof above);
    const float r = round_trip(x);
    ASSERT_TRUE(r == below || r == above) << x;
    // Above bfloat16's largest finite value the upper neighbour is 2^128, stored as infinity.
    const double d = double(x) - below, u = (up == 0x7f800000u ? 0x1.0p128 : double(above)) - x;
    if (d != u) ASSERT_EQ(r, d < u ? below : above) << x;
    if (x >= std::numeric_limits<float>::min() && std::isfinite(r))  // normal, no overflow: at most 2^-8 of it
      ASSERT_LE(std::fabs(double(r) - x), 0x1.0p-8 * x) << x;
  }
}
