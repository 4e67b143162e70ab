// Every registered kernel against its serial reference: float64 and float32, every test
// shape (non-multiples of the tile sizes included), random non-zero inputs from fixed
// seeds, outputs poisoned with NaN before the run, errors within the reference's
// derived bound (see kernels/reference/bounds.hpp).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/gemm_blocks.hpp"
#include "kernels/peak_exp.hpp"
#include "kernels/registry.hpp"

namespace {

using namespace sextant::kernels;

struct Case {
  const KernelInfo* kernel;
  Dtype dtype;
  std::size_t shape;
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const auto& k : registry())
    for (Dtype t : {Dtype::float64, Dtype::float32})
      if (k.supports(t))
        for (std::size_t s = 0; s < k.test_shapes.size(); ++s) out.push_back({&k, t, s});
  return out;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  return info.param.kernel->name + "_" + std::string(to_string(info.param.dtype)) + "_shape" +
         std::to_string(info.param.shape);
}

class KernelVsReference : public testing::TestWithParam<Case> {};

TEST_P(KernelVsReference, WithinBound) {
  const Case& c = GetParam();
  const Shape& shape = c.kernel->test_shapes[c.shape];
  SCOPED_TRACE(c.kernel->name + " " + std::string(to_string(c.dtype)) + " " + shape.str());
  auto instance = c.kernel->make(shape, c.dtype, 20240611 + c.shape);
  instance->run();  // a run before validation must not matter (in-place kernels restore state)
  const Validation v = instance->validate();
  EXPECT_TRUE(v.ok) << v.message;
  EXPECT_EQ(v.wrong, 0u) << v.message;
  EXPECT_GT(v.compared, 0u);
  EXPECT_GE(v.written_checked, v.compared > 0 ? 1u : 0u);
  EXPECT_LE(v.worst, 1.0);
  EXPECT_GT(c.kernel->bytes(shape, c.dtype), 0.0);
  EXPECT_GE(c.kernel->flops(shape, c.dtype), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Registry, KernelVsReference, testing::ValuesIn(all_cases()), case_name);

// peak_exp, the rate a roofline charges exponentials at, runs the chains it counts: every
// element after `reps` steps of y <- e^-y against the same steps through libm, rows whose
// length leaves a vector tail and rows of whole vectors. The limit, 16 epsilon relative:
// the start values lie in [0.05, 0.95], so every step's output lies in [0.38, 0.96],
// where an ulp is at most epsilon / 2. Each step adds at most 2.5 ulp (2 of fast::exp,
// test_fast_math, 0.5 of libm), 1.25 epsilon absolute, and carries an earlier step's
// error on times e^-y's slope, at most e^-0.38 = 0.69: at most 1.25 / (1 - 0.69) = 4
// epsilon absolute in all, 10.5 relative to y >= 0.38; 16 leaves a margin of 1.5. A
// step left out, or a tail not run, is off by ~50%.
template <class T>
void expect_peak_exp_chains(std::int64_t rows, std::int64_t cols, int reps) {
  Kokkos::View<T**, Kokkos::LayoutRight> y("y", rows, cols);
  auto start = [&](std::int64_t i, std::int64_t j) { return T(0.05 + 0.9 * double((i * cols + j) % 97) / 97); };
  auto host = Kokkos::create_mirror_view(y);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) host(i, j) = start(i, j);
  Kokkos::deep_copy(y, host);
  peak_exp(Kokkos::DefaultExecutionSpace(), y, reps);
  Kokkos::deep_copy(host, y);
  double worst = 0;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      T want = start(i, j);
      for (int r = 0; r < reps; ++r) want = std::exp(-want);
      worst = std::max(worst, std::fabs(double(host(i, j)) - double(want)) / double(want));
    }
  EXPECT_LE(worst, 16 * double(std::numeric_limits<T>::epsilon()))
      << rows << " x " << cols << ", " << reps << " steps";
}

TEST(PeakExp, RunsTheChainsItCounts) {
  for (int reps : {1, 7})
    for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{3, 37}, {5, 64}}) {
      expect_peak_exp_chains<float>(rows, cols, reps);
      expect_peak_exp_chains<double>(rows, cols, reps);
    }
  EXPECT_EQ(peak_exp_count(3, 37, 7), 3.0 * 37 * 7);
}

// The host GEMM's cache blocks, against the cache arithmetic of kernels/gemm_blocks.hpp:
// for the caches of several CPUs and the micro-tiles of both ISAs, the B micro-panel fits
// L1d, the A block an eighth of L2 and the B block three quarters of it (or each is a
// single micro-tile where the cache is too small for more), and every block is whole
// micro-tiles. Smaller caches never give larger blocks.
TEST(GemmBlocks, FitTheCachesTheyAreDerivedFor) {
  struct Tile { int mr, nr, bytes; };
  const Tile tiles[] = {{6, 16, 4}, {6, 8, 8}, {6, 64, 4}, {6, 32, 8}};  // AVX2 and AVX-512, fp32 and fp64
  const HostCaches caches[] = {{4 << 10, 16 << 10}, {32 << 10, 256 << 10}, {32 << 10, 512 << 10},
                               {48 << 10, 1 << 20}, {48 << 10, 2 << 20}, {64 << 10, 2 << 20}};
  for (const Tile& t : tiles) {
    GemmBlocks previous{};
    for (const HostCaches& c : caches) {
      SCOPED_TRACE("L1d " + std::to_string(c.l1d_bytes) + " L2 " + std::to_string(c.l2_bytes) + " tile " +
                   std::to_string(t.mr) + "x" + std::to_string(t.nr) + "x" + std::to_string(t.bytes));
      const GemmBlocks b = derive_gemm_blocks(c, t.mr, t.nr, t.bytes);
      EXPECT_EQ(b.source, "caches");
      EXPECT_GE(b.kb, 16);
      EXPECT_LE(b.kb, 256);
      EXPECT_EQ(b.kb % 8, 0);
      if (b.kb > 16) { EXPECT_LE(double(b.kb) * t.nr * t.bytes, double(c.l1d_bytes)); }
      const double slice = double(b.kb) * t.bytes;
      EXPECT_EQ(b.mb % t.mr, 0);
      EXPECT_EQ(b.nb % t.nr, 0);
      if (b.mb > t.mr) { EXPECT_LE(b.mb * slice, c.l2_bytes / 8.0); }
      if (b.nb > t.nr) { EXPECT_LE(b.nb * slice, c.l2_bytes * 0.75); }
      // Within one cache step of full: a block is not left small for no reason.
      if (b.kb < 256) { EXPECT_GT(double(b.kb + 8) * t.nr * t.bytes, double(c.l1d_bytes)); }
      EXPECT_GT((b.mb + t.mr) * slice, c.l2_bytes / 8.0);
      EXPECT_GE(b.kb, previous.kb);
      EXPECT_GE(double(b.mb + t.mr) * b.kb, double(previous.mb) * previous.kb);
      previous = b;
    }
  }
  // Caches the OS did not report: the smallest of current server cores, said so.
  const GemmBlocks unknown = derive_gemm_blocks({}, 6, 16, 4);
  const GemmBlocks assumed = derive_gemm_blocks({32 << 10, 512 << 10}, 6, 16, 4);
  EXPECT_EQ(unknown.source, "assumed caches");
  EXPECT_EQ(std::tie(unknown.mb, unknown.nb, unknown.kb), std::tie(assumed.mb, assumed.nb, assumed.kb));
}

// Every GEMM kernel against its reference with the blocks of tiny caches (16 deep, a
// micro-tile or two per block: every test shape crosses many slices and blocks), of large
// ones (every test shape in one block) and of the caches this process runs on.
TEST(GemmBlocks, GemmIsRightAtAnyCaches) {
  const HostCaches before = host_caches();
  for (const HostCaches c : {HostCaches{4 << 10, 16 << 10}, HostCaches{1 << 20, 64 << 20}, before}) {
    set_host_caches(c);
    for (const auto& k : registry()) {
      if (k.family != "gemm") continue;
      for (Dtype t : {Dtype::float64, Dtype::float32}) {
        if (!k.supports(t)) continue;
        for (std::size_t s = 0; s < k.test_shapes.size(); ++s) {
          SCOPED_TRACE(k.name + " " + std::string(to_string(t)) + " " + k.test_shapes[s].str() + " L1d " +
                       std::to_string(c.l1d_bytes) + " L2 " + std::to_string(c.l2_bytes));
          const Validation v = k.make(k.test_shapes[s], t, 777 + s)->validate();
          EXPECT_TRUE(v.ok) << v.message;
          EXPECT_GT(v.compared, 0u);
        }
      }
    }
  }
  set_host_caches(before);
}

// The registry holds the kernels the compute suite promises, each fully described.
TEST(Registry, HoldsEveryKernelDescribed) {
  const std::vector<std::string> expected = {
      "stream_copy", "stream_scale", "stream_add", "stream_triad", "stream_dot", "peak_fma", "gemm",
      "gemm_batched", "conv2d_forward", "bias_gelu_forward", "bias_gelu_backward", "relu_forward",
      "relu_backward", "softmax_forward", "softmax_backward", "layernorm_forward", "layernorm_backward",
      "attention_forward", "attention_backward", "embedding_forward", "embedding_backward", "reduce_sum",
      "adamw_update"};
  for (const auto& name : expected) EXPECT_NE(find_kernel(name), nullptr) << name;
  EXPECT_EQ(find_kernel("no_such_kernel"), nullptr);
  std::set<std::string> names;
  for (const auto& k : registry()) {
    SCOPED_TRACE(k.name);
    EXPECT_TRUE(names.insert(k.name).second) << "duplicate name";
    for (char ch : k.name) EXPECT_TRUE(std::islower(static_cast<unsigned char>(ch)) || ch == '_' || std::isdigit(static_cast<unsigned char>(ch)));
    EXPECT_FALSE(k.family.empty());
    EXPECT_FALSE(k.counting.empty());
    EXPECT_TRUE(k.supports(Dtype::float64));
    EXPECT_TRUE(k.supports(Dtype::float32));
    EXPECT_GE(k.test_shapes.size(), 3u);
    EXPECT_FALSE(k.quick_shapes.empty());
    EXPECT_FALSE(k.full_shapes.empty());
    ASSERT_TRUE(k.flops && k.bytes && k.make);
    for (ShapeSet set : {ShapeSet::test, ShapeSet::quick, ShapeSet::full})
      for (const auto& s : k.shapes(set)) {
        ASSERT_EQ(s.dims.size(), k.params.size()) << s.str();
        for (std::size_t i = 0; i < s.dims.size(); ++i) EXPECT_EQ(s.dims[i].first, k.params[i]);
        EXPECT_GT(k.bytes(s, Dtype::float64), 0.0) << s.str();
        EXPECT_DOUBLE_EQ(k.bytes(s, Dtype::float64) , 2 * k.bytes(s, Dtype::float32) -
                         (k.name.rfind("embedding", 0) == 0 ? 4.0 * s["tokens"] : 0.0))
            << "bytes scale with the scalar size " << s.str();
      }
  }
}

TEST(Registry, DtypesParseAndPrint) {
  for (Dtype t : available_dtypes()) EXPECT_EQ(parse_dtype(to_string(t)), t);
  EXPECT_EQ(parse_dtype("fp32"), Dtype::float32);
  EXPECT_EQ(parse_dtype("DOUBLE"), Dtype::float64);
  EXPECT_EQ(parse_dtype("bf16"), Dtype::bfloat16);
  EXPECT_FALSE(parse_dtype("int8").has_value());
  EXPECT_EQ(size_of(Dtype::float64), 8u);
  EXPECT_EQ(size_of(Dtype::float32), 4u);
  EXPECT_EQ(size_of(Dtype::float16), 2u);
}

TEST(Registry, ShapeLookup) {
  Shape s{{"M", 3}, {"N", 4}};
  EXPECT_EQ(s["N"], 4);
  EXPECT_EQ(s.str(), "M=3,N=4");
  EXPECT_THROW(s["K"], std::out_of_range);
  const KernelInfo* gemm = find_kernel("gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_THROW(gemm->make(gemm->test_shapes[0], Dtype::bfloat16, 1), std::invalid_argument);
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
