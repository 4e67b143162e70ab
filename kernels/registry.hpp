#pragma once
// The kernel registry: one small descriptor per kernel (after nccl-tests' per-collective
// structs), so a harness iterates kernels, dtypes and shapes without knowing any of them.
// This header needs no Kokkos; instances run on Kokkos' default execution space, so
// Kokkos must be initialised before make() and until the instance is destroyed.
//
// Adding a kernel: its template in kernels/<name>.hpp, a serial reference in
// kernels/reference/, and a descriptor (one entry) in kernels/descriptors/.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/gemm_blocks.hpp"

namespace sextant::kernels {

enum class Dtype { float64, float32, float16, bfloat16 };

std::string_view to_string(Dtype);
std::optional<Dtype> parse_dtype(std::string_view);  // "float64", "fp64", "double", ...
std::size_t size_of(Dtype);
// float64 and float32 always; float16 / bfloat16 where this Kokkos build has them as
// their own types (not aliases of float), e.g. on CUDA.
std::vector<Dtype> available_dtypes();

// A kernel's size: named integer parameters in a fixed order, e.g. M=512,N=512,K=512.
struct Shape {
  std::vector<std::pair<std::string, std::int64_t>> dims;

  Shape() = default;
  Shape(std::initializer_list<std::pair<std::string, std::int64_t>> d) : dims(d) {}
  std::int64_t operator[](std::string_view name) const;  // throws std::out_of_range
  std::string str() const;                               // "M=512,N=512,K=512"
};

// Outcome of one validation run. Every element of every output is checked for having
// been written (outputs are poisoned with NaN first); elements compared with the
// reference (all, or evenly spread rows on large O(n^3) shapes) must lie within the
// reference's error bound.
struct Validation {
  bool ok = true;
  std::size_t written_checked = 0;  // output elements checked for NaN/Inf
  std::size_t compared = 0;         // output elements compared with the reference
  std::size_t wrong = 0;            // not finite, or outside the bound
  double worst = 0;                 // max |got - reference| / bound (<= 1 passes)
  std::string message;              // the first wrong element, or empty
};

// Inputs allocated and filled (random, never zero, from the seed); outputs allocated.
class Instance {
 public:
  virtual ~Instance() = default;
  virtual void run() = 0;             // one execution of the kernel, fenced
  virtual Validation validate() = 0;  // poison outputs, run once, compare with the reference
};

enum class ShapeSet { test, quick, full };

struct KernelInfo {
  std::string name;     // "gemm", "softmax_backward", ...
  std::string family;   // "stream", "peak", "gemm", "conv", "activation", "normalization",
                        // "attention", "embedding", "reduction", "optimizer"
  std::string pass;     // "forward", "backward", "update" (optimizer), or "" (not a training pass)
  std::string counting; // what flops() and bytes() count, in words
  std::vector<std::string> params;  // the Shape's parameter names, in order
  std::vector<Dtype> dtypes;        // supported here
  std::vector<Shape> test_shapes, quick_shapes, full_shapes;
  double (*flops)(const Shape&, Dtype) = nullptr;
  double (*bytes)(const Shape&, Dtype) = nullptr;
  // Exponentials evaluated per call, each also one of flops()'s FLOPs (nullptr: none):
  // an exp costs a core ~20 vector operations, so a roofline charges them at the
  // measured exp rate (kernels/peak_exp.hpp), not as single FLOPs at the FMA peak.
  double (*exps)(const Shape&, Dtype) = nullptr;
  // A kernel that updates arrays in place (AdamW): its working set is `arrays` arrays of
  // one size, `updated` of which it writes back, so bytes() counts arrays + updated
  // array moves while the cache level it runs from is set by the arrays alone
  // (working_set()). Zero arrays: every byte counted is a distinct one.
  struct InPlace {
    int arrays = 0, updated = 0;
  } in_place;
  double working_set(const Shape& shape, Dtype dtype) const;
  std::unique_ptr<Instance> (*make)(const Shape&, Dtype, std::uint64_t seed) = nullptr;

  const std::vector<Shape>& shapes(ShapeSet) const;
  bool supports(Dtype) const;
};

std::span<const KernelInfo> registry();

// The vector ISA the registry's kernels were compiled for (kernels/isa.hpp, as seen by
// the translation units that instantiate them).
struct CompiledIsa {
  std::string_view name;
  int vector_bytes = 0, vector_registers = 0;
};
CompiledIsa compiled_isa();
// The cache blocks the portable GEMM of this dtype uses on this process's caches
// (kernels/gemm_blocks.hpp; on a device its fixed tiles): recorded beside its results.
GemmBlocks gemm_blocks(Dtype dtype);
const KernelInfo* find_kernel(std::string_view name);

}  // namespace sextant::kernels
