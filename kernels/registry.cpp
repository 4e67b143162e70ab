#include "kernels/registry.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "kernels/descriptors/support.hpp"
#include "kernels/isa.hpp"

namespace sextant::kernels {

std::string_view to_string(Dtype t) {
  switch (t) {
    case Dtype::float64: return "float64";
    case Dtype::float32: return "float32";
    case Dtype::float16: return "float16";
    case Dtype::bfloat16: return "bfloat16";
  }
  return "?";
}

std::optional<Dtype> parse_dtype(std::string_view text) {
  std::string s(text);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (s == "float64" || s == "fp64" || s == "f64" || s == "double") return Dtype::float64;
  if (s == "float32" || s == "fp32" || s == "f32" || s == "float") return Dtype::float32;
  if (s == "float16" || s == "fp16" || s == "f16" || s == "half") return Dtype::float16;
  if (s == "bfloat16" || s == "bf16") return Dtype::bfloat16;
  return std::nullopt;
}

std::size_t size_of(Dtype t) {
  switch (t) {
    case Dtype::float64: return 8;
    case Dtype::float32: return 4;
    case Dtype::float16:
    case Dtype::bfloat16: return 2;
  }
  return 0;
}

std::vector<Dtype> available_dtypes() {
  std::vector<Dtype> out = {Dtype::float64, Dtype::float32};
#ifdef SEXTANT_HAVE_FLOAT16
  out.push_back(Dtype::float16);
#endif
#ifdef SEXTANT_HAVE_BFLOAT16
  out.push_back(Dtype::bfloat16);
#endif
  return out;
}

std::int64_t Shape::operator[](std::string_view name) const {
  for (const auto& [n, v] : dims)
    if (n == name) return v;
  throw std::out_of_range("shape " + str() + " has no parameter " + std::string(name));
}

std::string Shape::str() const {
  std::string out;
  for (const auto& [n, v] : dims) {
    if (!out.empty()) out += ',';
    out += n + "=" + std::to_string(v);
  }
  return out;
}

const std::vector<Shape>& KernelInfo::shapes(ShapeSet set) const {
  switch (set) {
    case ShapeSet::test: return test_shapes;
    case ShapeSet::quick: return quick_shapes;
    case ShapeSet::full: return full_shapes;
  }
  return quick_shapes;
}

double KernelInfo::working_set(const Shape& shape, Dtype dtype) const {
  const double traffic = bytes(shape, dtype);
  if (in_place.arrays == 0) return traffic;
  return traffic * in_place.arrays / (in_place.arrays + in_place.updated);
}

bool KernelInfo::supports(Dtype t) const {
  return std::find(dtypes.begin(), dtypes.end(), t) != dtypes.end();
}

namespace {
std::vector<KernelInfo> build() {
  namespace d = descriptors;
  std::vector<KernelInfo> all;
  for (auto family : {d::stream_kernels, d::peak_kernels, d::gemm_kernels, d::conv_kernels,
                      d::activation_kernels, d::normalization_kernels, d::attention_kernels,
                      d::embedding_kernels, d::optimizer_kernels})
    for (auto& k : family()) all.push_back(std::move(k));
  return all;
}
}  // namespace

std::span<const KernelInfo> registry() {
  static const std::vector<KernelInfo> all = build();
  return all;
}

CompiledIsa compiled_isa() { return {isa::name, isa::vector_bytes, isa::vector_registers}; }

const KernelInfo* find_kernel(std::string_view name) {
  for (const auto& k : registry())
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace sextant::kernels
