// Tests of the size/duration parsing and formatting in core/units.hpp.
#include "core/units.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace {

using sextant::UsageError;

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

// Expects a UsageError whose message quotes the offending text.
void expect_rejected(const std::string& text) {
  try {
    auto v = sextant::parse_bytes(text);
    ADD_FAILURE() << "'" << text << "' was accepted as " << v;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'" + text + "'"), std::string::npos) << e.what();
  }
}

TEST(ParseBytes, PlainAndSuffixedSizesAreBinary) {
  EXPECT_EQ(sextant::parse_bytes("0"), 0u);
  EXPECT_EQ(sextant::parse_bytes("8"), 8u);
  EXPECT_EQ(sextant::parse_bytes("4096"), 4096u);
  EXPECT_EQ(sextant::parse_bytes("64K"), 64 * KiB);
  EXPECT_EQ(sextant::parse_bytes("64k"), 64 * KiB);
  EXPECT_EQ(sextant::parse_bytes("4M"), 4 * MiB);
  EXPECT_EQ(sextant::parse_bytes("1G"), GiB);
  EXPECT_EQ(sextant::parse_bytes("2KiB"), 2 * KiB);
  EXPECT_EQ(sextant::parse_bytes("3MB"), 3 * MiB);
  EXPECT_EQ(sextant::parse_bytes("5B"), 5u);
  EXPECT_EQ(sextant::parse_bytes("2gib"), 2 * GiB);
}

TEST(ParseBytes, LargestValuesDoNotWrap) {
  // 2^33 G = 2^63 bytes is still representable; anything that would wrap is refused.
  EXPECT_EQ(sextant::parse_bytes("8589934592G"), std::uint64_t{1} << 63);
  expect_rejected("8589934593G");
  expect_rejected("17592186044416M");  // 2^44 M = 2^64
  expect_rejected("99999999999999999999");  // 20 digits: beyond uint64
  expect_rejected("99999999999999999999K");
}

TEST(ParseBytes, RejectsMalformedTextQuotingIt) {
  for (const char* text : {"", "K", "-1", "8Q", "1.5M", " 8", "8 K", "M4", "0x10"}) expect_rejected(text);
}

TEST(ParseByteRange, ReadsAsOsuDoes) {
  const sextant::ByteRange defaults{1, 4 * MiB};
  auto r = sextant::parse_byte_range("2:64K", defaults);
  EXPECT_EQ(r.min, 2u);
  EXPECT_EQ(r.max, 64 * KiB);
  r = sextant::parse_byte_range("1M", defaults);  // -m 1M: up to 1 MiB
  EXPECT_EQ(r.min, 1u);
  EXPECT_EQ(r.max, MiB);
  r = sextant::parse_byte_range("2:", defaults);  // from 2 bytes to the default max
  EXPECT_EQ(r.min, 2u);
  EXPECT_EQ(r.max, 4 * MiB);
  r = sextant::parse_byte_range(":8K", defaults);
  EXPECT_EQ(r.min, 1u);
  EXPECT_EQ(r.max, 8 * KiB);
  r = sextant::parse_byte_range("64K:64K", defaults);  // one size
  EXPECT_EQ(r.min, r.max);
}

TEST(ParseByteRange, RejectsReversedOrMalformedRanges) {
  const sextant::ByteRange defaults{1, 4 * MiB};
  try {
    sextant::parse_byte_range("4M:1", defaults);
    ADD_FAILURE() << "4M:1 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'4M:1'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sextant::parse_byte_range("8M:", defaults), UsageError);  // above the default max
  EXPECT_THROW(sextant::parse_byte_range("1:2:3", defaults), UsageError);
  EXPECT_THROW(sextant::parse_byte_range("x", defaults), UsageError);
}

TEST(GeometricSizes, PowersOfTwoAndFour) {
  auto two = sextant::geometric_sizes({1, 1024}, 2);
  ASSERT_EQ(two.size(), 11u);
  for (std::size_t i = 0; i < two.size(); ++i) EXPECT_EQ(two[i], std::uint64_t{1} << i);

  EXPECT_EQ(sextant::geometric_sizes({1, 1024}, 4), (std::vector<std::uint64_t>{1, 4, 16, 64, 256, 1024}));
  // The maximum is an upper bound, not necessarily a member.
  EXPECT_EQ(sextant::geometric_sizes({3, 100}, 3), (std::vector<std::uint64_t>{3, 9, 27, 81}));
  EXPECT_EQ(sextant::geometric_sizes({8, 8}, 2), (std::vector<std::uint64_t>{8}));
}

TEST(GeometricSizes, ZeroMinimumYieldsZeroThenOne) {
  EXPECT_EQ(sextant::geometric_sizes({0, 8}, 2), (std::vector<std::uint64_t>{0, 1, 2, 4, 8}));
  EXPECT_EQ(sextant::geometric_sizes({0, 0}, 2), (std::vector<std::uint64_t>{0}));
}

TEST(GeometricSizes, SmallFactorsStillAdvance) {
  // ceil keeps a factor of 1.1 moving even from 1: every size strictly grows.
  auto s = sextant::geometric_sizes({1, 100}, 1.1);
  ASSERT_GE(s.size(), 2u);
  EXPECT_EQ(s.front(), 1u);
  for (std::size_t i = 1; i < s.size(); ++i) EXPECT_GT(s[i], s[i - 1]);
  EXPECT_LE(s.back(), 100u);
}

TEST(GeometricSizes, FactorMustExceedOne) {
  EXPECT_THROW(sextant::geometric_sizes({1, 1024}, 1.0), UsageError);
  EXPECT_THROW(sextant::geometric_sizes({1, 1024}, 0.5), UsageError);
  EXPECT_THROW(sextant::geometric_sizes({1, 1024}, -2), UsageError);
}

TEST(FormatBytes, PicksBinaryUnit) {
  EXPECT_EQ(sextant::format_bytes(0), "0 B");
  EXPECT_EQ(sextant::format_bytes(8), "8 B");
  EXPECT_EQ(sextant::format_bytes(1023), "1023 B");
  EXPECT_EQ(sextant::format_bytes(1024), "1 KiB");
  EXPECT_EQ(sextant::format_bytes(64 * 1024), "64 KiB");
  EXPECT_EQ(sextant::format_bytes(1.5 * 1024 * 1024), "1.5 MiB");
  EXPECT_EQ(sextant::format_bytes(4.0 * 1024 * 1024 * 1024), "4 GiB");
  EXPECT_EQ(sextant::format_bytes(2.0 * 1024 * 1024 * 1024 * 1024), "2 TiB");
  EXPECT_EQ(sextant::format_bytes(2048.0 * 1024 * 1024 * 1024 * 1024), "2048 TiB");  // largest unit
}

TEST(FormatSeconds, PicksUnitByMagnitude) {
  EXPECT_EQ(sextant::format_seconds(812e-9), "812 ns");
  EXPECT_EQ(sextant::format_seconds(3.42e-6), "3.42 us");
  EXPECT_EQ(sextant::format_seconds(1.25e-3), "1.25 ms");
  EXPECT_EQ(sextant::format_seconds(2.5), "2.5 s");
  EXPECT_EQ(sextant::format_seconds(0), "0 ns");
}

TEST(SplitList, DropsEmptyItems) {
  using V = std::vector<std::string>;
  EXPECT_EQ(sextant::split_list("a,b,c"), (V{"a", "b", "c"}));
  EXPECT_EQ(sextant::split_list(",a,,b,"), (V{"a", "b"}));
  EXPECT_EQ(sextant::split_list(""), V{});
  EXPECT_EQ(sextant::split_list(",,,"), V{});
  EXPECT_EQ(sextant::split_list("single"), V{"single"});
  EXPECT_EQ(sextant::split_list("/comm/world//x", '/'), (V{"comm", "world", "x"}));
}

}  // namespace

TEST(ParseNumbers, TheWholeTextOrNothing) {
  EXPECT_EQ(sextant::parse_number("2.5"), 2.5);
  EXPECT_EQ(sextant::parse_number("1e3"), 1000.0);
  EXPECT_FALSE(sextant::parse_number("2.5x"));
  EXPECT_FALSE(sextant::parse_number(""));
  EXPECT_FALSE(sextant::parse_number("1e999"));
  EXPECT_EQ(sextant::parse_int("42"), 42);
  EXPECT_FALSE(sextant::parse_int("4.2"));
  EXPECT_FALSE(sextant::parse_int("99999999999"));
}
