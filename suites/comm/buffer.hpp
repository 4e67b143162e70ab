#pragma once
// Communication buffers as Kokkos Views in a memory space chosen at run time, so
// device buffers are measured where Kokkos has a device space and MPI is GPU-aware.
#include <Kokkos_Core.hpp>

#include <string_view>
#include <vector>

namespace sextant::comm {

enum class MemoryKind { host, device };
MemoryKind parse_memory(std::string_view name);
bool device_memory_available();  // the default execution space has its own memory

class Buffer {
 public:
  Buffer() = default;
  Buffer(MemoryKind kind, std::size_t bytes);
  void* data() const { return kind_ == MemoryKind::host ? host_.data() : static_cast<void*>(device_.data()); }
  unsigned char* bytes_ptr() const { return static_cast<unsigned char*>(data()); }
  std::size_t bytes() const { return bytes_; }
  void copy_to_host(std::vector<unsigned char>& out) const;   // resizes out
  void copy_from_host(const std::vector<unsigned char>& in);  // in.size() <= bytes()

 private:
  using HostView = Kokkos::View<unsigned char*, Kokkos::HostSpace>;
  using DeviceView = Kokkos::View<unsigned char*, Kokkos::DefaultExecutionSpace::memory_space>;
  MemoryKind kind_ = MemoryKind::host;
  std::size_t bytes_ = 0;
  HostView host_;
  DeviceView device_;
};

}  // namespace sextant::comm
