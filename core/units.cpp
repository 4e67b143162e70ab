#include "core/units.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace sextant {

std::uint64_t parse_bytes(std::string_view text) {
  std::string s(text);
  auto bad = [&] {
    return UsageError("'" + s + "' is not a size in bytes (examples: 8, 64K, 4M, 1G)");
  };
  std::size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0 || i > 19) throw bad();
  std::uint64_t value = std::stoull(s.substr(0, i));
  std::string suffix;
  for (char c : s.substr(i)) suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (suffix.empty() || suffix == "B")
    shift = 0;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB")
    shift = 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB")
    shift = 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB")
    shift = 30;
  else
    throw bad();
  if (shift && value > (std::uint64_t{1} << (63 - shift))) throw bad();
  return value << shift;
}

ByteRange parse_byte_range(std::string_view text, ByteRange defaults) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos) return {defaults.min, parse_bytes(text)};  // MAX, as OSU's -m
  auto lo = text.substr(0, colon), hi = text.substr(colon + 1);
  if (lo.empty() && hi.empty()) throw UsageError("size range ':' names neither MIN nor MAX");
  ByteRange r{lo.empty() ? defaults.min : parse_bytes(lo), hi.empty() ? defaults.max : parse_bytes(hi)};
  if (r.min > r.max)
    throw UsageError("size range '" + std::string(text) + "': MIN is larger than MAX");
  return r;
}

std::vector<std::uint64_t> geometric_sizes(ByteRange range, double factor) {
  if (!(factor > 1.0))
    throw UsageError("size factor " + std::to_string(factor) + " must be greater than 1");
  std::vector<std::uint64_t> sizes;
  std::uint64_t n = range.min;
  if (n == 0) {
    sizes.push_back(0);
    n = 1;
  }
  while (n <= range.max) {
    sizes.push_back(n);
    auto next = static_cast<std::uint64_t>(std::ceil(static_cast<double>(n) * factor));
    n = next > n ? next : n + 1;
  }
  return sizes;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  // %.4g never switches to exponent notation below 1024.
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g %s", bytes, units[u]);
  return buf;
}

std::string format_seconds(double s) {
  char buf[32];
  double a = std::fabs(s);
  // Four significant digits: no exponent notation within a unit's [1, 1000) range.
  if (a < 1e-6)
    std::snprintf(buf, sizeof buf, "%.4g ns", s * 1e9);
  else if (a < 1e-3)
    std::snprintf(buf, sizeof buf, "%.4g us", s * 1e6);
  else if (a < 1)
    std::snprintf(buf, sizeof buf, "%.4g ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.4g s", s);
  return buf;
}

std::vector<std::string> split_list(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

namespace {
// The whole text converted by std::sto*, or nothing.
template <class T, class Convert>
std::optional<T> whole(std::string_view text, Convert convert) {
  const std::string s(text);
  try {
    std::size_t used = 0;
    const T v = convert(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}
}  // namespace

std::optional<double> parse_number(std::string_view text) {
  return whole<double>(text, [](const std::string& s, std::size_t* used) { return std::stod(s, used); });
}

std::optional<int> parse_int(std::string_view text) {
  return whole<int>(text, [](const std::string& s, std::size_t* used) { return std::stoi(s, used); });
}

}  // namespace sextant
