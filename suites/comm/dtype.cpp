#include "suites/comm/dtype.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/bfloat16.hpp"
#include "core/error.hpp"
#include "suites/common/mpi.hpp"

namespace sextant::comm {

namespace {
const DtypeInfo table[] = {
    {Dtype::byte, "byte", MPI_BYTE, 1, 0.0},
    {Dtype::int32, "int32", MPI_INT32_T, 4, 0.0},
    {Dtype::float32, "float32", MPI_FLOAT, 4, std::numeric_limits<float>::epsilon() / 2},
    {Dtype::float64, "float64", MPI_DOUBLE, 8, std::numeric_limits<double>::epsilon() / 2},
    {Dtype::bfloat16, "bfloat16", MPI_UINT16_T, 2, 0x1.0p-8},  // 8 significant bits
};
}  // namespace

const DtypeInfo& info(Dtype t) { return table[static_cast<int>(t)]; }

Dtype parse_dtype(std::string_view name) {
  for (const auto& d : table)
    if (d.name == name) return d.dtype;
  throw UsageError("unknown datatype '" + std::string(name) + "' (use int32, float32, float64, bfloat16)");
}

std::string_view to_string(Reduction r) {
  switch (r) {
    case Reduction::sum: return "sum";
    case Reduction::max: return "max";
    case Reduction::min: return "min";
  }
  return "?";
}

Reduction parse_reduction(std::string_view name) {
  for (auto r : {Reduction::sum, Reduction::max, Reduction::min})
    if (to_string(r) == name) return r;
  throw UsageError("unknown reduction '" + std::string(name) + "' (use sum, max, min)");
}

MPI_Op mpi_op(Reduction r, Dtype t) {
  if (t == Dtype::bfloat16) {
    if (r != Reduction::sum)
      throw UsageError("--op " + std::string(to_string(r)) + " with bfloat16: only sum (a user-defined operation)");
    return bfloat16_sum();
  }
  switch (r) {
    case Reduction::sum: return MPI_SUM;
    case Reduction::max: return MPI_MAX;
    case Reduction::min: return MPI_MIN;
  }
  return MPI_SUM;
}

double apply(Reduction r, double a, double b) {
  switch (r) {
    case Reduction::sum: return a + b;
    case Reduction::max: return std::max(a, b);
    case Reduction::min: return std::min(a, b);
  }
  return a;
}

double pattern(Dtype t, int rank, std::size_t i) {
  auto k = static_cast<std::uint64_t>(rank) * 7919u + static_cast<std::uint64_t>(i) * 104729u;
  switch (t) {
    case Dtype::byte: return static_cast<double>(k % 251 + 1);
    case Dtype::int32: return static_cast<double>(k % 1021 + 1);
    case Dtype::float32:
    case Dtype::float64: return static_cast<double>(k % 1021 + 1) * 0.25;
    case Dtype::bfloat16: return static_cast<double>(k % 255 + 1) * 0.25;  // 8 significant bits
  }
  return 1;
}

void store(Dtype t, unsigned char* bytes, std::size_t i, double value) {
  switch (t) {
    case Dtype::byte: bytes[i] = static_cast<unsigned char>(value); return;
    case Dtype::int32: {
      auto v = static_cast<std::int32_t>(value);
      std::memcpy(bytes + i * 4, &v, 4);
      return;
    }
    case Dtype::float32: {
      auto v = static_cast<float>(value);
      std::memcpy(bytes + i * 4, &v, 4);
      return;
    }
    case Dtype::float64: std::memcpy(bytes + i * 8, &value, 8); return;
    case Dtype::bfloat16: {
      const std::uint16_t v = bf16::from_float(static_cast<float>(value));
      std::memcpy(bytes + i * 2, &v, 2);
      return;
    }
  }
}

double load(Dtype t, const unsigned char* bytes, std::size_t i) {
  switch (t) {
    case Dtype::byte: return bytes[i];
    case Dtype::int32: {
      std::int32_t v;
      std::memcpy(&v, bytes + i * 4, 4);
      return v;
    }
    case Dtype::float32: {
      float v;
      std::memcpy(&v, bytes + i * 4, 4);
      return v;
    }
    case Dtype::float64: {
      double v;
      std::memcpy(&v, bytes + i * 8, 8);
      return v;
    }
    case Dtype::bfloat16: {
      std::uint16_t v;
      std::memcpy(&v, bytes + i * 2, 2);
      return bf16::to_float(v);
    }
  }
  return 0;
}

double poison(Dtype t) {
  switch (t) {
    case Dtype::byte: return 0;  // pattern() is never 0
    case Dtype::int32: return -1;
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

}  // namespace sextant::comm
