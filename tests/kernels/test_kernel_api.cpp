// The kernel templates called directly: what the registry's fixed settings do not
// reach (GEMM's alpha and beta, the repeated STREAM forms of the working-set sweep),
// the analytic counts, argument checks, and the validation machinery catching a
// wrong or unwritten element.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <limits>

#include "kernels/activation.hpp"
#include "kernels/conv2d.hpp"
#include "kernels/descriptors/support.hpp"
#include "kernels/embedding.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/reference/blas.hpp"
#include "kernels/reference/conv2d.hpp"
#include "kernels/reference/elementwise.hpp"
#include "kernels/reference/normalization.hpp"
#include "kernels/softmax.hpp"
#include "kernels/stream.hpp"

namespace {

using namespace sextant::kernels;
using Exec = Kokkos::DefaultExecutionSpace;
using descriptors::to_host;

template <class Scalar>
void check_gemm_alpha_beta(bool ta, bool tb) {
  const std::int64_t M = 70, N = 45, K = 300;
  Exec exec;
  View2<Scalar, Exec> A("A", ta ? K : M, ta ? M : K), B("B", tb ? N : K, tb ? K : N), C("C", M, N);
  fill_uniform(exec, A, 1, 0.1, 1.0);
  fill_uniform(exec, B, 2, 0.1, 1.0);
  fill_uniform(exec, C, 3, 0.1, 1.0);
  const auto c0 = to_host(C);
  const Scalar alpha = Scalar(-0.75), beta = Scalar(1.5);
  gemm(exec, ta ? Trans::yes : Trans::no, tb ? Trans::yes : Trans::no, alpha, A, B, beta, C);
  exec.fence();
  auto ref = reference::gemm(1, M, N, K, ta, tb, double(alpha), to_host(A), to_host(B), double(beta), c0,
                             descriptors::unit_roundoff<Scalar>());
  sextant::kernels::Validation v;
  descriptors::compare(v, "C", to_host(C), ref);
  EXPECT_TRUE(v.ok) << v.message;
  EXPECT_EQ(v.compared, std::size_t(M * N));
}

TEST(Gemm, AlphaBetaAllTransposes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      check_gemm_alpha_beta<double>(ta, tb);
      check_gemm_alpha_beta<float>(ta, tb);
    }
}

TEST(Gemm, KZeroScalesC) {
  Exec exec;
  View2<double, Exec> A("A", 5, 0), B("B", 0, 7), C("C", 5, 7);
  Kokkos::deep_copy(C, 2.0);
  gemm(exec, Trans::no, Trans::no, 1.0, A, B, 0.5, C);
  exec.fence();
  for (double c : to_host(C)) EXPECT_EQ(c, 1.0);
}

TEST(Gemm, MismatchedShapesThrow) {
  Exec exec;
  View2<double, Exec> A("A", 4, 5), B("B", 6, 7), C("C", 4, 7);
  EXPECT_THROW(gemm(exec, Trans::no, Trans::no, 1.0, A, B, 0.0, C), std::invalid_argument);
  View3<double, Exec> A3("A", 2, 4, 5), B3("B", 3, 5, 7), C3("C", 2, 4, 7);
  EXPECT_THROW(gemm_batched(exec, Trans::no, Trans::no, 1.0, A3, B3, 0.0, C3), std::invalid_argument);
}

// The direct (workspace-free) form against the reference; the registry covers the
// im2col + GEMM form.
// The row kernels have a host path for contiguous rows and a generic one (teams, column
// blocks) for everything else; a View with a row stride wider than its rows takes the
// host path, a strided (LayoutStride) column view the generic one. Both must match the
// serial reference, and softmax must also run in place (y aliasing x, dx aliasing dy),
// as its header promises.
template <class Scalar>
void check_softmax_paths() {
  const std::int64_t rows = 19, cols = 133;
  Exec exec;
  View2<Scalar, Exec> x("x", rows, cols), y("y", rows, cols), dy("dy", rows, cols), dx("dx", rows, cols);
  fill_uniform(exec, x, 5, 0.1, 4.0);
  fill_uniform(exec, dy, 6, 0.1, 1.0);
  const double u = descriptors::unit_roundoff<Scalar>();
  const auto ref_y = reference::softmax_forward(rows, cols, to_host(x), u);
  softmax_forward(exec, x, y);
  exec.fence();
  const auto ref_dx = reference::softmax_backward(rows, cols, to_host(y), to_host(dy), u);
  softmax_backward(exec, y, dy, dx);
  exec.fence();
  Validation v;
  descriptors::compare(v, "y", to_host(y), ref_y);
  descriptors::compare(v, "dx", to_host(dx), ref_dx);
  EXPECT_TRUE(v.ok) << v.message;

  // In place: the same values, bit for bit (the same arithmetic on the same inputs).
  View2<Scalar, Exec> xy("xy", rows, cols), g("g", rows, cols);
  Kokkos::deep_copy(xy, x);
  Kokkos::deep_copy(g, dy);
  softmax_forward(exec, xy, xy);
  softmax_backward(exec, y, g, g);
  exec.fence();
  EXPECT_EQ(to_host(xy), to_host(y));
  EXPECT_EQ(to_host(g), to_host(dx));

  // Strided rows (every other column of a wider array): the generic path.
  View2<Scalar, Exec> wide_x("wide_x", rows, 2 * cols), wide_y("wide_y", rows, 2 * cols);
  Kokkos::View<Scalar**, Kokkos::LayoutStride, typename Exec::memory_space> strided_x(
      wide_x.data(), Kokkos::LayoutStride(rows, 2 * cols, cols, 2));
  Kokkos::View<Scalar**, Kokkos::LayoutStride, typename Exec::memory_space> strided_y(
      wide_y.data(), Kokkos::LayoutStride(rows, 2 * cols, cols, 2));
  Kokkos::deep_copy(strided_x, x);
  softmax_forward(exec, strided_x, strided_y);
  exec.fence();
  View2<Scalar, Exec> packed("packed", rows, cols);
  Kokkos::deep_copy(packed, strided_y);
  Validation w;
  descriptors::compare(w, "y (strided)", to_host(packed), ref_y);
  EXPECT_TRUE(w.ok) << w.message;
}

TEST(RowKernels, SoftmaxHostGenericAndInPlace) {
  check_softmax_paths<double>();
  check_softmax_paths<float>();
}

// bias+GELU over the whole range of its input, where exp2's clamps act (|z| beyond ~9
// for float32, ~20 for float64) and the output saturates to z or to 0: finite, and
// within the reference's bound, forward and backward, in vectors and in the row's tail.
template <class Scalar>
void check_gelu_whole_range() {
  const std::int64_t rows = 3, cols = 45;
  const double u = descriptors::unit_roundoff<Scalar>();
  Exec exec;
  View2<Scalar, Exec> x("x", rows, cols), y("y", rows, cols), dy("dy", rows, cols), dx("dx", rows, cols);
  View1<Scalar, Exec> bias("bias", cols), dbias("dbias", cols);
  auto hx = Kokkos::create_mirror_view(x);
  const double big = std::is_same_v<Scalar, float> ? 1e30 : 1e300;
  const double ends[] = {-big, -1e4, -120.0, -40.0, -25.0, -12.0, -9.5, 9.5, 12.0, 25.0, 40.0, 120.0, 1e4, big};
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::int64_t k = i * cols + j;  // every end value, then a sweep of [-30, 30]
      hx(i, j) = Scalar(k < 14 ? ends[k] : -30.0 + 60.0 * double(k - 14) / double(rows * cols - 15));
    }
  Kokkos::deep_copy(x, hx);
  fill_uniform(exec, dy, 11, 0.1, 1.0);
  Kokkos::deep_copy(bias, Scalar(0));
  bias_gelu_forward(exec, x, bias, y);
  bias_gelu_backward(exec, dy, x, bias, dx, dbias);
  exec.fence();
  const auto hy = to_host(y), hdx = to_host(dx);
  for (std::size_t k = 0; k < hy.size(); ++k) {
    EXPECT_TRUE(std::isfinite(hy[k])) << "gelu(" << double(hx.data()[k]) << ")";
    EXPECT_TRUE(std::isfinite(hdx[k])) << "gelu'(" << double(hx.data()[k]) << ")";
  }
  Validation v;
  descriptors::compare(v, "y", hy, reference::bias_gelu_forward(rows, cols, to_host(x), to_host(bias), u));
  descriptors::compare(v, "dx", hdx,
                       reference::bias_gelu_backward(rows, cols, to_host(dy), to_host(x), to_host(bias), u)[0]);
  EXPECT_TRUE(v.ok) << v.message;
}

TEST(RowKernels, GeluOverItsWholeRange) {
  check_gelu_whole_range<double>();
  check_gelu_whole_range<float>();
}

// Layer norm's and bias+GELU's parameter gradients sum over rows in chunks on the host:
// row counts around the chunk size (one short chunk, exactly one, one row over) and a
// strided input (the generic path, the one GPUs take) all match the reference.
template <class Scalar>
void check_row_reduction_gradients(std::int64_t rows) {
  const std::int64_t cols = 37;
  const double u = descriptors::unit_roundoff<Scalar>();
  Exec exec;
  View2<Scalar, Exec> x("x", rows, cols), y("y", rows, cols), dy("dy", rows, cols), dx("dx", rows, cols);
  View1<Scalar, Exec> gamma("gamma", cols), beta("beta", cols), dgamma("dgamma", cols), dbeta("dbeta", cols),
      mean("mean", rows), rstd("rstd", rows);
  fill_uniform(exec, x, 7, 0.1, 2.0);
  fill_uniform(exec, dy, 8, 0.1, 1.0);
  fill_uniform(exec, gamma, 9, 0.5, 1.5);
  fill_uniform(exec, beta, 10, 0.1, 1.0);
  layernorm_forward(exec, x, gamma, beta, Scalar(1e-5), y, mean, rstd);
  layernorm_backward(exec, dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
  exec.fence();
  auto ref = reference::layernorm_backward(rows, cols, to_host(dy), to_host(x), to_host(gamma), to_host(mean),
                                           to_host(rstd), u);
  Validation v;
  descriptors::compare(v, "dx", to_host(dx), ref[0]);
  descriptors::compare(v, "dgamma", to_host(dgamma), ref[1]);
  descriptors::compare(v, "dbeta", to_host(dbeta), ref[2]);

  bias_gelu_backward(exec, dy, x, gamma, dx, dbeta);
  exec.fence();
  auto gref = reference::bias_gelu_backward(rows, cols, to_host(dy), to_host(x), to_host(gamma), u);
  descriptors::compare(v, "gelu dx", to_host(dx), gref[0]);
  descriptors::compare(v, "gelu dbias", to_host(dbeta), gref[1]);

  // The same through strided Views: the generic path.
  View2<Scalar, Exec> wide("wide", rows, 2 * cols), wide_dx("wide_dx", rows, 2 * cols);
  using Strided = Kokkos::View<Scalar**, Kokkos::LayoutStride, typename Exec::memory_space>;
  Strided sx(wide.data(), Kokkos::LayoutStride(rows, 2 * cols, cols, 2));
  Strided sdx(wide_dx.data(), Kokkos::LayoutStride(rows, 2 * cols, cols, 2));
  Kokkos::deep_copy(sx, x);
  bias_gelu_backward(exec, dy, sx, gamma, sdx, dbeta);
  exec.fence();
  View2<Scalar, Exec> packed("packed", rows, cols);
  Kokkos::deep_copy(packed, sdx);
  descriptors::compare(v, "gelu dx (strided)", to_host(packed), gref[0]);
  descriptors::compare(v, "gelu dbias (strided)", to_host(dbeta), gref[1]);
  Kokkos::deep_copy(dgamma, Scalar(0));
  Kokkos::deep_copy(dbeta, Scalar(0));
  layernorm_backward(exec, dy, sx, gamma, mean, rstd, sdx, dgamma, dbeta);
  exec.fence();
  Kokkos::deep_copy(packed, sdx);
  descriptors::compare(v, "dx (strided)", to_host(packed), ref[0]);
  descriptors::compare(v, "dgamma (strided)", to_host(dgamma), ref[1]);
  descriptors::compare(v, "dbeta (strided)", to_host(dbeta), ref[2]);
  EXPECT_TRUE(v.ok) << "rows " << rows << ": " << v.message;
}

TEST(RowKernels, ParameterGradientsAcrossChunks) {
  // ... and around the generic path's chunk (column_sums).
  for (std::int64_t rows : {std::int64_t(1), host::rows_per_chunk - 1, host::rows_per_chunk,
                            host::rows_per_chunk + 1, 3 * host::rows_per_chunk + 5, column_sum_rows - 1,
                            column_sum_rows, column_sum_rows + 1, 3 * column_sum_rows + 5}) {
    check_row_reduction_gradients<double>(rows);
    check_row_reduction_gradients<float>(rows);
  }
}

// Embedding backward with every token hitting few rows (many collisions), indices in
// every vocabulary block, and a vocabulary larger than the host path's block count.
TEST(RowKernels, EmbeddingBackwardSumsEveryToken) {
  const std::int64_t vocab = 700, tokens = 3000, dim = 9;
  Exec exec;
  View2<double, Exec> dout("dout", tokens, dim), dtable("dtable", vocab, dim);
  Kokkos::View<int*, typename Exec::memory_space> index("index", tokens);
  fill_uniform(exec, dout, 11, 0.1, 1.0);
  fill_indices(exec, index, 12, vocab);
  Kokkos::deep_copy(dtable, 42.0);  // must be overwritten, not added to
  embedding_backward(exec, dout, index, dtable);
  exec.fence();
  const auto g = to_host(dout), got = to_host(dtable);
  const auto idx = descriptors::indices_to_host(index);
  std::vector<double> want(vocab * dim, 0.0);
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t d = 0; d < dim; ++d) want[idx[t] * dim + d] += g[t * dim + d];
  for (std::int64_t i = 0; i < vocab * dim; ++i) EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::abs(want[i]))) << i;
}

TEST(Conv2d, DirectFormMatchesTheReference) {
  Exec exec;
  for (const Conv2dShape& s : {Conv2dShape{2, 3, 9, 11, 4, 3, 3, 1, 1}, Conv2dShape{1, 5, 17, 37, 6, 5, 5, 2, 2},
                               Conv2dShape{1, 2, 20, 35, 3, 3, 3, 1, 0}}) {
    View4<float, Exec> x("x", s.N, s.C, s.H, s.W), w("w", s.K, s.C, s.R, s.S), y("y", s.N, s.K, s.OH(), s.OW());
    fill_uniform(exec, x, 1, 0.1, 1.0);
    fill_uniform(exec, w, 2, 0.1, 1.0);
    descriptors::poison(y);
    conv2d_forward_direct(exec, x, w, y, int(s.stride), int(s.pad));
    exec.fence();
    sextant::kernels::Validation v;
    descriptors::compare(v, "y", to_host(y), reference::conv2d_forward(s, to_host(x), to_host(w), 0x1.0p-24));
    EXPECT_TRUE(v.ok) << v.message;
  }
}

TEST(Conv2d, MismatchedShapesThrow) {
  Exec exec;
  View4<double, Exec> x("x", 1, 2, 5, 5), w("w", 3, 2, 3, 3), y("y", 1, 3, 3, 3);
  EXPECT_THROW(conv2d_forward_direct(exec, x, w, y, 1, 1), std::invalid_argument);  // output would be 5 x 5
  EXPECT_NO_THROW(conv2d_forward_direct(exec, x, w, y, 1, 0));                        // 3 x 3
  View3<double, Exec> small("cols", 1, 18, 8);
  EXPECT_THROW(conv2d_forward(exec, x, w, y, 1, 0, small), std::invalid_argument);  // needs (1, 18, 9)
  auto cols = conv2d_workspace<double, Exec>(Conv2dShape{1, 2, 5, 5, 3, 3, 3, 1, 0});
  EXPECT_EQ(cols.extent(2), 9u);
  EXPECT_NO_THROW(conv2d_forward(exec, x, w, y, 1, 0, cols));
  exec.fence();
}

// The working-set sweep's forms: one launch, many sweeps, per-thread chunks.
TEST(Stream, RepeatedFormsMatchTheReference) {
  Exec exec;
  for (std::int64_t n : {1, 17, 1000, 65537}) {
    View1<double, Exec> a("a", n), b("b", n), c("c", n);
    fill_uniform(exec, b, 5, 0.5, 1.5);
    fill_uniform(exec, c, 6, 0.5, 1.5);
    descriptors::poison(a);
    stream_triad_repeated(exec, a, b, c, 0.4, 3);
    exec.fence();
    const double u = 0x1.0p-53;
    sextant::kernels::Validation v;
    descriptors::compare(v, "a", to_host(a), reference::stream_triad(to_host(b), to_host(c), 0.4, u));
    EXPECT_TRUE(v.ok) << v.message;
    const double dot = stream_dot_repeated(exec, b, c, 4);
    auto ref = reference::dot(to_host(b), to_host(c), u);
    EXPECT_NEAR(dot, 4 * ref.value[0], 4 * ref.bound[0] + 1e-300) << n;
    EXPECT_NEAR(stream_dot(exec, b, c), ref.value[0], ref.bound[0]) << n;
  }
}

TEST(Counts, AnalyticFormulas) {
  EXPECT_EQ(stream_bytes(StreamOp::triad, 1000, 8), 24000);
  EXPECT_EQ(stream_bytes(StreamOp::copy, 1000, 4), 8000);
  EXPECT_EQ(stream_bytes(StreamOp::dot, 10, 8), 160);
  EXPECT_EQ(stream_flops(StreamOp::triad, 10), 20);
  EXPECT_EQ(stream_flops(StreamOp::copy, 10), 0);
  EXPECT_EQ(gemm_flops(2, 3, 4), 48);
  EXPECT_EQ(gemm_flops(2, 3, 4, 5), 240);
  EXPECT_EQ(gemm_bytes(2, 3, 4, 8), (8 + 12 + 6) * 8);
  EXPECT_EQ(gemm_bytes(2, 3, 4, 8, 1, true), (8 + 12 + 12) * 8);
  Conv2dShape s{2, 3, 8, 8, 4, 3, 3, 1, 1};
  EXPECT_EQ(s.OH(), 8);
  EXPECT_EQ(conv2d_flops(s), 2.0 * 2 * 4 * 8 * 8 * 3 * 3 * 3);
  Conv2dShape s2{1, 1, 7, 9, 1, 3, 3, 2, 0};
  EXPECT_EQ(s2.OH(), 3);
  EXPECT_EQ(s2.OW(), 4);
}

// An in-place kernel's working set: its arrays once, against its traffic, which counts
// the updated ones twice (AdamW: param, grad, m, v, three written back: 4 of 7 moves).
TEST(Counts, InPlaceWorkingSet) {
  const KernelInfo* adamw = find_kernel("adamw_update");
  ASSERT_NE(adamw, nullptr);
  const Shape shape{{"n", 1000}};
  EXPECT_EQ(adamw->bytes(shape, Dtype::float32), 7 * 1000 * 4);
  EXPECT_EQ(adamw->working_set(shape, Dtype::float32), 4 * 1000 * 4);
  for (const KernelInfo& k : registry())
    if (k.quick_shapes.empty() || k.dtypes.empty() || !k.bytes)
      continue;
    else if (k.in_place.arrays == 0)
      EXPECT_EQ(k.working_set(k.quick_shapes[0], k.dtypes[0]), k.bytes(k.quick_shapes[0], k.dtypes[0])) << k.name;
    else
      EXPECT_TRUE(k.in_place.updated >= 1 && k.in_place.updated <= k.in_place.arrays) << k.name;
}

// The checker itself: a NaN (unwritten element) and a value off by more than its bound
// are both caught; a value within its bound is not.
TEST(Validation, CatchesUnwrittenAndWrongElements) {
  reference::Bounded ref;
  ref.value = {1.0, 2.0, 3.0};
  ref.bound = {1e-6, 1e-6, 1e-6};
  sextant::kernels::Validation ok;
  descriptors::compare(ok, "x", {1.0, 2.0 + 5e-7, 3.0}, ref);
  EXPECT_TRUE(ok.ok);
  EXPECT_NEAR(ok.worst, 0.5, 1e-6);
  sextant::kernels::Validation nan;
  descriptors::compare(nan, "x", {1.0, std::numeric_limits<double>::quiet_NaN(), 3.0}, ref);
  EXPECT_FALSE(nan.ok);
  EXPECT_EQ(nan.wrong, 1u);
  EXPECT_NE(nan.message.find("x[1]"), std::string::npos);
  sextant::kernels::Validation off;
  descriptors::compare(off, "x", {1.0, 2.0, 3.01}, ref);
  EXPECT_FALSE(off.ok);
  EXPECT_GT(off.worst, 1.0);
  // A sampled reference: unwritten elements outside the sample are still caught.
  reference::Bounded sampled;
  sampled.index = {0};
  sampled.value = {1.0};
  sampled.bound = {0.0};
  sextant::kernels::Validation partial;
  descriptors::compare(partial, "y", {1.0, std::numeric_limits<double>::quiet_NaN()}, sampled);
  EXPECT_FALSE(partial.ok);
  EXPECT_EQ(partial.written_checked, 2u);
  EXPECT_EQ(partial.compared, 1u);
}

TEST(Fill, NeverZeroAndInRange) {
  Exec exec;
  View1<float, Exec> x("x", 100000);
  fill_uniform(exec, x, 9, 0.1, 1.0);
  bool negative = false;
  for (double v : to_host(x)) {
    ASSERT_GE(std::abs(v), 0.1 - 1e-7);
    ASSERT_LE(std::abs(v), 1.0 + 1e-7);
    negative |= v < 0;
  }
  EXPECT_TRUE(negative);
}

TEST(Reference, SampleRowsSpreadsAndKeepsEnds) {
  auto all = reference::sample_rows(10, 1.0, 100.0);
  EXPECT_EQ(all.size(), 10u);
  auto some = reference::sample_rows(1000, 10.0, 100.0);
  EXPECT_EQ(some.front(), 0);
  EXPECT_EQ(some.back(), 999);
  EXPECT_LE(some.size(), 10u);
  EXPECT_GE(some.size(), 2u);
}

}  // namespace
