#pragma once
// AdamW update (Loshchilov & Hutter, decoupled weight decay, as torch.optim.AdamW), in
// place on the parameters and both moments, at step t >= 1:
//   m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2
//   p = p - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) - lr wd p
// Counted: 16 FLOPs per element (moments 3 + 4, bias corrections 2, sqrt 1, + eps 1,
// divide 1, decay 2, update 2; sqrt and divide counted as 1). Bytes: 7 n s (p, g, m, v
// read; p, m, v written).
#include <cstdint>
#include <stdexcept>

#include "kernels/common.hpp"
#include "kernels/counts.hpp"

namespace sextant::kernels {

struct AdamWParams {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
  int step = 1;
};

template <class Exec, class VP, class VG, class VM>
void adamw_update(const Exec& exec, VP param, VG grad, VM m, VM v, const AdamWParams& hp) {
  using Scalar = typename VP::non_const_value_type;
  if (grad.extent(0) != param.extent(0) || m.extent(0) != param.extent(0) ||
      v.extent(0) != param.extent(0) || hp.step < 1)
    throw std::invalid_argument("sextant::adamw_update: shapes do not match or step < 1");
  const Scalar b1 = Scalar(hp.beta1), b2 = Scalar(hp.beta2), one_b1 = Scalar(1 - hp.beta1),
               one_b2 = Scalar(1 - hp.beta2), lr = Scalar(hp.lr), eps = Scalar(hp.eps),
               decay = Scalar(hp.lr * hp.weight_decay);
  double c1 = 1, c2 = 1;  // 1 / (1 - beta^t), on the host
  for (int t = 0; t < hp.step; ++t) {
    c1 *= hp.beta1;
    c2 *= hp.beta2;
  }
  const Scalar corr1 = Scalar(1 / (1 - c1)), corr2 = Scalar(1 / (1 - c2));
  Kokkos::parallel_for(
      "sextant::adamw_update", Kokkos::RangePolicy<Exec>(exec, 0, param.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const Scalar g = grad(i);
        const Scalar mi = b1 * m(i) + one_b1 * g;
        const Scalar vi = b2 * v(i) + one_b2 * g * g;
        m(i) = mi;
        v(i) = vi;
        const Scalar p = param(i);
        param(i) = p - lr * (mi * corr1) / (math::sqrt(vi * corr2) + eps) - decay * p;
      });
}

}  // namespace sextant::kernels
