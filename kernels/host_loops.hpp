#pragma once
// Loops over one contiguous row on a host core, for the host paths of the row-wise
// kernels (layer norm, softmax, the bias gradients). Element-wise loops vectorise by
// themselves once their pointers are __restrict; reductions do not: the compiler may
// not reassociate a floating-point sum, so `s += x[j]` stays one scalar chain at one
// add per 4 cycles, a tenth of what a core streams from L1. Here a reduction runs on
// several explicit vector accumulators (kernels/isa.hpp's width), as a tuned BLAS dot
// does; the order of the additions depends on the ISA, not on the thread count.
//
//   host::reduce<T>(n, init, term, combine)   combine over j < n of term(at j)
//   host::sum<T>(n, term)                     the same with +, from 0
//   host::sum2<T>(n, term)                    two sums in one pass (term returns a pair)
//   host::for_each<T>(n, body)                body(at j) for every j < n (element-wise)
//   host::prefetch_along(at, p)               ask for p[j..], a row read next, from a pass
//   host::prefetch_for_write_along(at, p)     ask to own p[j..], a row written next
// `term` is a generic lambda of an index object `at` whose at.load(p) is p[j..j+W) as a
// vector, or p[j] in the tail (at.store(p, v) writes them): one expression serves both, e.g.
//   host::sum<T>(n, [&](auto at) { auto d = at.load(x) - mu; return d * d; })
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/common.hpp"
#include "kernels/isa.hpp"

// Before an element-wise loop whose pointers may alias only element for element (an
// in-place softmax): no dependence between iterations, so the compiler vectorises it
// without a run-time overlap check (which exact aliasing would fail).
#if defined(__clang__)
#define SEXTANT_INDEPENDENT_ITERATIONS _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define SEXTANT_INDEPENDENT_ITERATIONS _Pragma("GCC ivdep")
#else
#define SEXTANT_INDEPENDENT_ITERATIONS
#endif

namespace sextant::kernels::host {

// Row i of a 2-D View whose rows are contiguous (stride 1 along the last dimension),
// as a pointer: what the host paths take. Views of other layouts use the generic path.
template <class V>
bool rows_contiguous(const V& v) {
  return v.extent(1) <= 1 || v.stride(1) == 1;
}
template <class V>
auto row(const V& v, std::int64_t i) {
  return v.data() + i * std::int64_t(v.stride(0));
}

// Rows of a row-blocked reduction over rows (a bias or norm-parameter gradient): chunks
// of this many rows each sum into their own partial row, and the partial rows are then
// added in chunk order. Every row is read once, in order, and the sums do not depend on
// the thread count (only on the shape).
inline constexpr std::int64_t rows_per_chunk = 32;

// Asks the memory system for p[j..], where j is the index `at` of the pass it is called
// from: a row this work item reads next, one request per vector of this row's pass. A
// row of a few KiB ends about when a hardware prefetcher has learnt its stream (they stop
// at page boundaries), so each row would otherwise start at the latency of the level it
// lives in. Called from a pass that works from L1 (a row kernel's later passes), the next
// row streams in while this one computes. (A whole row asked for at once fills the
// core's miss buffers, and the core waits for them to drain.)
template <class At, class T>
inline void prefetch_along(At at, const T* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p + at.j);
#else
  (void)at, (void)p;
#endif
}

// Asks to own p[j..], a row this work item writes in its next pass, one request per
// vector, from a pass that works from L1. A store to a line not in cache must first
// fetch it (write-allocate); a row of such stores fills the core's store queue and the
// core stalls behind it. Fetched ahead, the row's lines arrive while the pass before
// computes, and the memory system stays busy in both passes rather than only in the
// writing one. Used only where a side-by-side measurement showed it faster on both
// ISAs (the layer norm's backward); in the other row kernels it cost more than it saved.
template <class At, class T>
inline void prefetch_for_write_along(At at, T* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p + at.j, 1);
#else
  (void)at, (void)p;
#endif
}

template <class T>
struct ElementAt {
  std::int64_t j;
  T load(const T* p) const { return p[j]; }
  void store(T* p, T v) const { p[j] = v; }
};

#ifdef SEXTANT_HOST_VECTORS
template <class T>
using Vec = typename isa::Vector<T>::type;

template <class T>
struct VectorAt {
  std::int64_t j;
  Vec<T> load(const T* p) const {
    Vec<T> v;
    std::memcpy(&v, p + j, sizeof v);
    return v;
  }
  void store(T* p, Vec<T> v) const { std::memcpy(p + j, &v, sizeof v); }
};
#endif

template <class T, class Term, class Combine>
inline T reduce(std::int64_t n, T init, Term term, Combine combine) {
  std::int64_t j = 0;
  T result = init;
#ifdef SEXTANT_HOST_VECTORS
  if constexpr (isa::has_vector<T>) {
    // Four accumulators: enough independent chains to cover an add's latency on the
    // two vector pipes of a core while the loads stream from L1 or L2.
    constexpr int W = isa::lanes<T>, U = 4;
    const Vec<T> start = Vec<T>{} + init;
    Vec<T> acc[U] = {start, start, start, start};
    for (; j + U * W <= n; j += U * W)
      for (int u = 0; u < U; ++u) acc[u] = combine(acc[u], term(VectorAt<T>{j + u * W}));
    for (; j + W <= n; j += W) acc[0] = combine(acc[0], term(VectorAt<T>{j}));
    const Vec<T> all = combine(combine(acc[0], acc[1]), combine(acc[2], acc[3]));
    for (int l = 0; l < W; ++l) result = combine(result, T(all[l]));
  }
#endif
  for (; j < n; ++j) result = combine(result, term(ElementAt<T>{j}));
  return result;
}

// Two sums over the same row in one pass: term(at) returns both terms of element j
// (as a std::pair), so the operands they share are loaded once. Two accumulators each:
// four independent chains, as reduce's four.
template <class T, class Term>
inline std::pair<T, T> sum2(std::int64_t n, Term term) {
  std::int64_t j = 0;
  T first = 0, second = 0;
#ifdef SEXTANT_HOST_VECTORS
  if constexpr (isa::has_vector<T>) {
    constexpr int W = isa::lanes<T>;
    Vec<T> a0{}, a1{}, b0{}, b1{};
    for (; j + 2 * W <= n; j += 2 * W) {
      const auto [x0, y0] = term(VectorAt<T>{j});
      const auto [x1, y1] = term(VectorAt<T>{j + W});
      a0 += x0, b0 += y0, a1 += x1, b1 += y1;
    }
    for (; j + W <= n; j += W) {
      const auto [x0, y0] = term(VectorAt<T>{j});
      a0 += x0, b0 += y0;
    }
    const Vec<T> a = a0 + a1, b = b0 + b1;
    for (int l = 0; l < W; ++l) first += T(a[l]), second += T(b[l]);
  }
#endif
  for (; j < n; ++j) {
    const auto [x, y] = term(ElementAt<T>{j});
    first += x, second += y;
  }
  return {first, second};
}

// An element-wise pass over a row, in vectors from its first element, then the tail.
// Written out because GCC 12 vectorised such loops for AVX-512 from their second element
// on, after one scalar iteration: with rows that start on a 64-byte boundary every
// 64-byte load and store then spanned two cache lines (a layer norm's output pass ran at
// two thirds of the AVX2 build's speed on the same host).
template <class T, class Body>
inline void for_each(std::int64_t n, Body body) {
  std::int64_t j = 0;
#ifdef SEXTANT_HOST_VECTORS
  if constexpr (isa::has_vector<T>) {
    constexpr int W = isa::lanes<T>;
    for (; j + W <= n; j += W) body(VectorAt<T>{j});
  }
#endif
  for (; j < n; ++j) body(ElementAt<T>{j});
}

// for_each in blocks of N vectors, for bodies that work on a block in lockstep
// (fast_math.hpp): body(at) with at.count values of type at.value_type, the k-th at
// at.load(p, k) / at.store(p, k, v). Blocks of N vectors, then single vectors, then
// the tail's elements one by one (count 1, a scalar).
template <class V, int N>
struct BlockAt {
  using value_type = V;
  static constexpr int count = N;
  std::int64_t j;
  template <class T>
  V load(const T* p, int k) const {
    V v;
    std::memcpy(&v, p + j + k * std::int64_t(sizeof(V) / sizeof(T)), sizeof v);
    return v;
  }
  template <class T>
  void store(T* p, int k, V v) const {
    std::memcpy(p + j + k * std::int64_t(sizeof(V) / sizeof(T)), &v, sizeof v);
  }
};

template <class T, int N, class Body>
inline void for_each_block(std::int64_t n, Body body) {
  std::int64_t j = 0;
#ifdef SEXTANT_HOST_VECTORS
  if constexpr (isa::has_vector<T>) {
    constexpr int W = isa::lanes<T>;
    for (; j + N * W <= n; j += N * W) body(BlockAt<Vec<T>, N>{j});
    for (; j + W <= n; j += W) body(BlockAt<Vec<T>, 1>{j});
  }
#endif
  for (; j < n; ++j) body(BlockAt<T, 1>{j});
}

struct Plus {
  template <class A>
  A operator()(A a, A b) const { return a + b; }
};

// The larger of a and b, lane by lane for vectors (GCC's vector ?:).
struct Max {
  template <class A>
  A operator()(A a, A b) const { return a > b ? a : b; }
};

template <class T, class Term>
inline T sum(std::int64_t n, Term term) {
  return reduce<T>(n, T(0), term, Plus{});
}

// out(j) = sum over chunks c of partial(c, offset + j), added in chunk order: the second
// step of a row-blocked reduction (rows_per_chunk). Work items own blocks of columns.
template <class Exec, class VP, class VOut>
void add_partial_rows(const Exec& exec, VP partial, std::int64_t offset, VOut out) {
  using Scalar = typename VOut::non_const_value_type;
  constexpr std::int64_t B = 256;
  const std::int64_t cols = out.extent(0), chunks = partial.extent(0);
  Kokkos::parallel_for(
      "sextant::add_partial_rows", Kokkos::RangePolicy<Exec>(exec, 0, ceil_div(cols, B)),
      KOKKOS_LAMBDA(const std::int64_t block) {
        const std::int64_t j0 = block * B, width = cols - j0 < B ? cols - j0 : B;
        Scalar acc[B] = {};
        for (std::int64_t c = 0; c < chunks; ++c) {
          const Scalar* p = &partial(c, offset + j0);
          for (std::int64_t k = 0; k < width; ++k) acc[k] += p[k];
        }
        for (std::int64_t k = 0; k < width; ++k) out(j0 + k) = acc[k];
      });
}

}  // namespace sextant::kernels::host
