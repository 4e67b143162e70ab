#include "core/allocator.hpp"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sextant {

namespace {

bool environment_configures_malloc() {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"})
    if (std::getenv(name)) return true;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables && std::strstr(tunables, "glibc.malloc.");
}

}  // namespace

std::string keep_freed_memory() {
#if defined(__SANITIZE_ADDRESS__)
  return "AddressSanitizer's allocator (thresholds do not apply)";
#elif defined(__GLIBC__)
  if (environment_configures_malloc()) return "glibc malloc as the environment configures it (MALLOC_*_, GLIBC_TUNABLES)";
  constexpr int kept = 32 << 20;
  if (mallopt(M_MMAP_THRESHOLD, kept) == 1 && mallopt(M_TRIM_THRESHOLD, 2 * kept) == 1)
    return "glibc malloc keeping freed blocks up to 32 MiB (mmap threshold 32 MiB, trim threshold 64 MiB)";
  return "glibc malloc with its defaults (mallopt refused the thresholds)";
#else
  return "the C library's malloc with its defaults";
#endif
}

}  // namespace sextant
