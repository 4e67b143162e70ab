#include "suites/comm/buffer.hpp"

#include <type_traits>

#include "core/error.hpp"

namespace sextant::comm {

MemoryKind parse_memory(std::string_view name) {
  if (name == "host") return MemoryKind::host;
  if (name == "device") {
    if (!device_memory_available())
      throw UsageError("--memory device: this Kokkos build has no device memory space (only host)");
    return MemoryKind::device;
  }
  throw UsageError("unknown memory kind '" + std::string(name) + "' (use host or device)");
}

bool device_memory_available() {
  return !std::is_same_v<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace>;
}

Buffer::Buffer(MemoryKind kind, std::size_t bytes) : kind_(kind), bytes_(bytes) {
  // Allocate at least one byte so data() is never null (MPI rejects null with count 0 on some builds).
  std::size_t n = bytes > 0 ? bytes : 1;
  // Zeroed, so that every page is mapped before anything is timed: --off-cache rotates
  // through buffer sets that nothing else touches first, and a first touch inside a
  // timed iteration costs a page fault per 4 KiB (on a KVM guest the off-cache 1 MiB
  // ping-pong took 3.7 ms with them, 1.7 ms without).
  if (kind == MemoryKind::host)
    host_ = HostView("sextant::comm::host", n);
  else
    device_ = DeviceView("sextant::comm::device", n);
}

void Buffer::copy_to_host(std::vector<unsigned char>& out) const {
  out.resize(bytes_);
  if (bytes_ == 0) return;
  Kokkos::View<unsigned char*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dst(out.data(), bytes_);
  if (kind_ == MemoryKind::host)
    Kokkos::deep_copy(dst, Kokkos::subview(host_, std::make_pair(std::size_t{0}, bytes_)));
  else
    Kokkos::deep_copy(dst, Kokkos::subview(device_, std::make_pair(std::size_t{0}, bytes_)));
}

void Buffer::copy_from_host(const std::vector<unsigned char>& in) {
  if (in.empty()) return;
  Kokkos::View<const unsigned char*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> src(in.data(), in.size());
  auto range = std::make_pair(std::size_t{0}, in.size());
  if (kind_ == MemoryKind::host)
    Kokkos::deep_copy(Kokkos::subview(host_, range), src);
  else
    Kokkos::deep_copy(Kokkos::subview(device_, range), src);
  Kokkos::fence();
}

}  // namespace sextant::comm
