// Every registered kernel against its serial reference: float64 and float32, every test
// shape (non-multiples of the tile sizes included), random non-zero inputs from fixed
// seeds, outputs poisoned with NaN before the run, errors within the reference's
// derived bound (see kernels/reference/bounds.hpp).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cctype>
#include <set>
#include <string>
#include <vector>

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
