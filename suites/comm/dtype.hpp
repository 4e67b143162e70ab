#pragma once
// Element types and reductions the comm suite measures and validates.
#include <mpi.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sextant::comm {

// bfloat16 (core/bfloat16.hpp) travels as MPI_UINT16_T and is summed by a user-defined
// operation (bfloat16_sum, suites/common/mpi.hpp): what a framework's compressed
// gradients cost, nccl-tests' -d bfloat16. Its reductions: sum only.
enum class Dtype { byte, int32, float32, float64, bfloat16 };
enum class Reduction { sum, max, min };

struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  MPI_Datatype mpi;
  std::size_t size;
  double epsilon;  // unit roundoff; 0 for exact types
};

const DtypeInfo& info(Dtype t);
Dtype parse_dtype(std::string_view name);  // UsageError naming the value
std::string_view to_string(Reduction r);
Reduction parse_reduction(std::string_view name);
// The operation that reduces `t` by `r`; UsageError where the type has none (bfloat16's
// max and min: its bits do not order as its values).
MPI_Op mpi_op(Reduction r, Dtype t);
double apply(Reduction r, double a, double b);

// The value element i of rank `rank`'s send buffer holds. Exactly representable in
// every type (small multiples of 1/4, integers for int32, bytes mod 251), different
// per rank and per element, never zero.
double pattern(Dtype t, int rank, std::size_t i);

// Host-side typed access to untyped bytes.
void store(Dtype t, unsigned char* bytes, std::size_t i, double value);
double load(Dtype t, const unsigned char* bytes, std::size_t i);

// What must not survive an operation that should overwrite it.
double poison(Dtype t);

}  // namespace sextant::comm
