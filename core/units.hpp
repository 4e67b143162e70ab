#pragma once
// Byte counts and durations as people type and read them: 64K, 4M, 1G (powers of
// two, as OSU and nccl-tests use), and sizes in B/KiB/MiB for tables.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sextant {

// "4096", "4K", "64k", "4M", "1G", "2KiB", "3MB" (all binary). Throws UsageError
// naming the text when it is not a non-negative size.
std::uint64_t parse_bytes(std::string_view text);

struct ByteRange {
  std::uint64_t min = 0, max = 0;
};
// OSU's -m: "MIN:MAX"; "MAX" alone (from the default MIN); "MIN:" (to the default MAX);
// ":MAX". A single size is "N:N". Throws UsageError naming the text.
ByteRange parse_byte_range(std::string_view text, ByteRange defaults);

// min, min*factor, ... <= max; factor > 1. A min of 0 yields 0 then 1, factor, ...
std::vector<std::uint64_t> geometric_sizes(ByteRange range, double factor);

std::string format_bytes(double bytes);        // "8 B", "64 KiB", "1.5 MiB" (4 significant digits)
std::string format_seconds(double seconds);    // "812 ns", "3.42 us", "1.2 ms", "2.5 s" (4 significant digits)

// Splits "a,b,c" into {"a","b","c"}, dropping empty items.
std::vector<std::string> split_list(std::string_view text, char sep = ',');

// The whole text as a number, or nothing ("12x", "", "1e999" are nothing): for options
// whose callers say what the number was for.
std::optional<double> parse_number(std::string_view text);
std::optional<int> parse_int(std::string_view text);

}  // namespace sextant
