// keep_freed_memory (core/allocator.hpp): after it, a block that was freed comes back
// without faulting its pages in again. glibc's defaults unmap (or trim) every size here
// on free, so the second allocation of each would fault all of its pages.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/allocator.hpp"

using namespace sextant;

namespace {
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

constexpr std::size_t page = 4096;

// Page faults of allocating `bytes` and writing every page (through a volatile pointer:
// the compiler may drop a malloc, memset and free that nothing reads).
long faults_to_use(std::size_t bytes) {
  const long before = minor_faults();
  char* volatile p = static_cast<char*>(std::malloc(bytes));
  for (std::size_t i = 0; i < bytes; i += page) p[i] = 1;
  const long faults = minor_faults() - before;
  std::free(p);
  return faults;
}
}  // namespace

TEST(Allocator, TheFaultCountSeesFreshPages) {  // the instrument of the test below
  constexpr std::size_t pages = 64;
  const long before = minor_faults();
  void* p = mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 1, pages * page);  // mmap's memory is never elided
  EXPECT_GE(minor_faults() - before, long(pages) / 2);  // transparent huge pages could take some in one
  munmap(p, pages * page);
}

TEST(Allocator, AFreedBlockComesBackWithoutFaults) {
  const std::string what = keep_freed_memory();
  if (what.find("keeping freed blocks") == std::string::npos) GTEST_SKIP() << "allocator: " << what;
  for (std::size_t bytes : {std::size_t(256) << 10, std::size_t(1) << 20, std::size_t(8) << 20}) {
    faults_to_use(bytes);
    // A few faults of bookkeeping at most, against bytes / page (64-2048) had the block
    // gone back to the system.
    EXPECT_LE(faults_to_use(bytes), 4) << bytes << " B again: the freed block was given back (" << bytes / page
                                       << " pages)";
  }
}
