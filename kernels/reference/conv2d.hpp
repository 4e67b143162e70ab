#pragma once
// Serial reference: direct NCHW convolution, forward, with zero padding.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/conv2d.hpp"
#include "kernels/reference/bounds.hpp"

namespace sextant::kernels::reference {

// y on the listed (n, k) output planes (plane = n K + k; all when empty).
// Bound: 2 gamma(C R S + 1) sum |w x| over the window.
inline Bounded conv2d_forward(const Conv2dShape& s, const std::vector<double>& x,
                              const std::vector<double>& w, double u,
                              std::vector<std::int64_t> planes = {}) {
  if (planes.empty())
    for (std::int64_t p = 0; p < s.N * s.K; ++p) planes.push_back(p);
  const std::int64_t OH = s.OH(), OW = s.OW();
  const double g = gamma(double(s.C * s.R * s.S + 1), u);
  Bounded r;
  r.resize(planes.size() * OH * OW);
  r.index.resize(r.value.size());
  std::size_t out = 0;
  for (std::int64_t plane : planes) {
    const std::int64_t n = plane / s.K, k = plane % s.K;
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow, ++out) {
        double acc = 0, mag = 0;
        for (std::int64_t c = 0; c < s.C; ++c)
          for (std::int64_t rr = 0; rr < s.R; ++rr) {
            const std::int64_t ih = oh * s.stride - s.pad + rr;
            if (ih < 0 || ih >= s.H) continue;
            for (std::int64_t q = 0; q < s.S; ++q) {
              const std::int64_t iw = ow * s.stride - s.pad + q;
              if (iw < 0 || iw >= s.W) continue;
              const double t = w[((k * s.C + c) * s.R + rr) * s.S + q] * x[((n * s.C + c) * s.H + ih) * s.W + iw];
              acc += t;
              mag += std::abs(t);
            }
          }
        r.index[out] = std::size_t(((n * s.K + k) * OH + oh) * OW + ow);
        r.value[out] = acc;
        r.bound[out] = 2 * g * mag;
      }
  }
  return r;
}

}  // namespace sextant::kernels::reference
