#pragma once
// Random streams that are the same on every standard library: std::mt19937_64 is
// specified to the bit, the std:: distributions (normal, exponential, uniform_real,
// shuffle's index draws) are not, so synthetic test data built on them differ between
// libstdc++ and libc++. These draw from the raw 64-bit words only.
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

namespace sextant::testing {

class Random {
 public:
  explicit Random(std::uint64_t seed) : rng_(seed) {}
  // Uniform in (0, 1): 53 random bits, never 0 or 1.
  double uniform_open() { return (static_cast<double>(rng_() >> 11) + 0.5) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform_open(); }
  // Standard normal by Box-Muller.
  double normal() {
    const double u1 = uniform_open(), u2 = uniform_open();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  double exponential(double rate) { return -std::log(uniform_open()) / rate; }
  // Fisher-Yates with indices from the raw words.
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng_() % i]);
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace sextant::testing
