#pragma once
// Serial reference: unfused scaled dot-product attention, forward and backward, with
// the error bounds of each step propagated through the next (a perturbation dS of the
// scores moves each probability by at most P (|dS_ij| + sum_k P_ik |dS_ik|)).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/reference/bounds.hpp"

namespace sextant::kernels::reference {

struct AttentionShape {
  std::int64_t BH = 1, Lq = 1, Lk = 1, D = 1;
};

// Outputs {O, P}.
inline std::vector<Bounded> attention_forward(const AttentionShape& s, const std::vector<double>& q,
                                              const std::vector<double>& k, const std::vector<double>& v,
                                              double scale, double u) {
  const std::int64_t BH = s.BH, Lq = s.Lq, Lk = s.Lk, D = s.D;
  Bounded O, P;
  O.resize(std::size_t(BH * Lq * D));
  P.resize(std::size_t(BH * Lq * Lk));
  std::vector<double> S(Lk), dS(Lk);
  for (std::int64_t b = 0; b < BH; ++b)
    for (std::int64_t i = 0; i < Lq; ++i) {
      const double* qi = q.data() + (b * Lq + i) * D;
      for (std::int64_t j = 0; j < Lk; ++j) {
        const double* kj = k.data() + (b * Lk + j) * D;
        double acc = 0, mag = 0;
        for (std::int64_t d = 0; d < D; ++d) acc += qi[d] * kj[d], mag += std::abs(qi[d] * kj[d]);
        S[j] = scale * acc;
        dS[j] = 2 * gamma(double(D + 3), u) * std::abs(scale) * mag;
      }
      const double m = *std::max_element(S.begin(), S.end());
      double sum = 0, spread = 0, dmax = *std::max_element(dS.begin(), dS.end());
      for (std::int64_t j = 0; j < Lk; ++j) sum += std::exp(S[j] - m), spread = std::max(spread, m - S[j]);
      double* pv = P.value.data() + (b * Lq + i) * Lk;
      double* pb = P.bound.data() + (b * Lq + i) * Lk;
      for (std::int64_t j = 0; j < Lk; ++j) {
        pv[j] = std::exp(S[j] - m) / sum;
        pb[j] = 2 * pv[j] * (gamma(double(Lk + 8), u) + u * (m - S[j] + spread)) + pv[j] * 2 * dmax;
      }
      for (std::int64_t d = 0; d < D; ++d) {
        double acc = 0, mag = 0, prop = 0;
        for (std::int64_t j = 0; j < Lk; ++j) {
          const double vj = v[(b * Lk + j) * D + d];
          acc += pv[j] * vj, mag += std::abs(pv[j] * vj), prop += pb[j] * std::abs(vj);
        }
        O.value[(b * Lq + i) * D + d] = acc;
        O.bound[(b * Lq + i) * D + d] = 2 * gamma(double(Lk + 3), u) * mag + prop;
      }
    }
  return {O, P};
}

// From the forward's P (exact input) and dO; outputs {dQ, dK, dV}.
inline std::vector<Bounded> attention_backward(const AttentionShape& s, const std::vector<double>& q,
                                               const std::vector<double>& k, const std::vector<double>& v,
                                               const std::vector<double>& p, const std::vector<double>& dout,
                                               double scale, double u) {
  const std::int64_t BH = s.BH, Lq = s.Lq, Lk = s.Lk, D = s.D;
  Bounded dQ, dK, dV;
  dQ.resize(std::size_t(BH * Lq * D));
  dK.resize(std::size_t(BH * Lk * D));
  dV.resize(std::size_t(BH * Lk * D));
  std::vector<double> dS(Lq * Lk), dSerr(Lq * Lk), dP(Lk), dPerr(Lk);
  for (std::int64_t b = 0; b < BH; ++b) {
    const double* P = p.data() + b * Lq * Lk;
    const double* dO = dout.data() + b * Lq * D;
    const double* Q = q.data() + b * Lq * D;
    const double* K = k.data() + b * Lk * D;
    const double* V = v.data() + b * Lk * D;
    // dV = P^T dO
    for (std::int64_t j = 0; j < Lk; ++j)
      for (std::int64_t d = 0; d < D; ++d) {
        double acc = 0, mag = 0;
        for (std::int64_t i = 0; i < Lq; ++i) acc += P[i * Lk + j] * dO[i * D + d], mag += std::abs(P[i * Lk + j] * dO[i * D + d]);
        dV.value[(b * Lk + j) * D + d] = acc;
        dV.bound[(b * Lk + j) * D + d] = 2 * gamma(double(Lq + 3), u) * mag;
      }
    // dP = dO V^T, then dS = P (dP - rowsum(P dP)), each with its propagated bound.
    for (std::int64_t i = 0; i < Lq; ++i) {
      double srow = 0, smag = 0, serr = 0;
      for (std::int64_t j = 0; j < Lk; ++j) {
        double acc = 0, mag = 0;
        for (std::int64_t d = 0; d < D; ++d) acc += dO[i * D + d] * V[j * D + d], mag += std::abs(dO[i * D + d] * V[j * D + d]);
        dP[j] = acc;
        dPerr[j] = 2 * gamma(double(D + 3), u) * mag;
        srow += P[i * Lk + j] * acc, smag += std::abs(P[i * Lk + j] * acc), serr += P[i * Lk + j] * dPerr[j];
      }
      for (std::int64_t j = 0; j < Lk; ++j) {
        const double pij = P[i * Lk + j];
        dS[i * Lk + j] = pij * (dP[j] - srow);
        dSerr[i * Lk + j] = pij * (dPerr[j] + serr) +
                            2 * pij * (gamma(double(Lk + 1), u) * smag + gamma(2, u) * (std::abs(dP[j]) + std::abs(srow)));
      }
    }
    // dQ = scale dS K, dK = scale dS^T Q
    for (std::int64_t i = 0; i < Lq; ++i)
      for (std::int64_t d = 0; d < D; ++d) {
        double acc = 0, mag = 0, prop = 0;
        for (std::int64_t j = 0; j < Lk; ++j) {
          acc += dS[i * Lk + j] * K[j * D + d];
          mag += std::abs(dS[i * Lk + j] * K[j * D + d]);
          prop += dSerr[i * Lk + j] * std::abs(K[j * D + d]);
        }
        dQ.value[(b * Lq + i) * D + d] = scale * acc;
        dQ.bound[(b * Lq + i) * D + d] = std::abs(scale) * (2 * gamma(double(Lk + 3), u) * mag + prop);
      }
    for (std::int64_t j = 0; j < Lk; ++j)
      for (std::int64_t d = 0; d < D; ++d) {
        double acc = 0, mag = 0, prop = 0;
        for (std::int64_t i = 0; i < Lq; ++i) {
          acc += dS[i * Lk + j] * Q[i * D + d];
          mag += std::abs(dS[i * Lk + j] * Q[i * D + d]);
          prop += dSerr[i * Lk + j] * std::abs(Q[i * D + d]);
        }
        dK.value[(b * Lk + j) * D + d] = scale * acc;
        dK.bound[(b * Lk + j) * D + d] = std::abs(scale) * (2 * gamma(double(Lq + 3), u) * mag + prop);
      }
  }
  return {dQ, dK, dV};
}

}  // namespace sextant::kernels::reference
