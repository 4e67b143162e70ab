#include "kernels/gemm_blocks.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace sextant::kernels {
namespace {

HostCaches process_caches;

// Used where the OS reported no cache: the smallest L1d and L2 of current x86 and Arm
// server cores, so that the blocks fit wherever the process runs.
constexpr HostCaches assumed_caches{32 * 1024, 512 * 1024};

int round_down(long long value, int multiple, long long lo, long long hi) {
  const long long v = std::clamp(value, lo, hi);
  return int(std::max<long long>(multiple, v / multiple * multiple));
}

// SEXTANT_GEMM_BLOCKS=MB,NB,KB, read once; 0 (or absent) keeps the derived value.
struct Override {
  int mb = 0, nb = 0, kb = 0;
  bool set = false;
};

Override read_override() {
  Override o;
  const char* text = std::getenv("SEXTANT_GEMM_BLOCKS");
  if (text == nullptr || *text == '\0') return o;
  const std::string value = text;
  int* fields[] = {&o.mb, &o.nb, &o.kb};
  const char* p = text;
  for (int i = 0; i < 3; ++i) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    const bool last = i == 2;
    if (end == p || v < 0 || v > (1 << 20) || (last ? *end != '\0' : *end != ','))
      throw std::invalid_argument("SEXTANT_GEMM_BLOCKS=" + value +
                                  ": expected MB,NB,KB, three integers in 0..1048576 (0 keeps the derived size)");
    *fields[i] = int(v);
    p = end + 1;
  }
  o.set = true;
  return o;
}

}  // namespace

void set_host_caches(const HostCaches& caches) { process_caches = caches; }

HostCaches host_caches() { return process_caches; }

GemmBlocks derive_gemm_blocks(const HostCaches& caches, int mr, int nr, int scalar_bytes) {
  const bool known = caches.l1d_bytes > 0 && caches.l2_bytes > 0;
  const HostCaches c = known ? caches : assumed_caches;
  GemmBlocks b;
  b.kb = round_down(c.l1d_bytes / (static_cast<long long>(nr) * scalar_bytes), 8, 16, 256);
  const long long slice = static_cast<long long>(b.kb) * scalar_bytes;
  b.mb = round_down(c.l2_bytes / 8 / slice, mr, mr, 1 << 16);
  b.nb = round_down(c.l2_bytes * 3 / 4 / slice, nr, nr, 1 << 16);
  b.source = known ? "caches" : "assumed caches";
  return b;
}

GemmBlocks host_gemm_blocks(int mr, int nr, int scalar_bytes) {
  static const Override user = read_override();
  GemmBlocks b = derive_gemm_blocks(process_caches, mr, nr, scalar_bytes);
  if (user.set) {
    // Whole micro-tiles, as the packing needs.
    if (user.mb > 0) b.mb = std::max(mr, user.mb / mr * mr);
    if (user.nb > 0) b.nb = std::max(nr, user.nb / nr * nr);
    if (user.kb > 0) b.kb = user.kb;
    b.source = "SEXTANT_GEMM_BLOCKS";
  }
  return b;
}

}  // namespace sextant::kernels
