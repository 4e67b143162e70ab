#pragma once
// Facts about the machine this process runs on, read from the OS (no MPI needed).
#include <string>
#include <vector>

namespace sextant {

struct CacheLevel {
  int level = 0;
  std::string type;  // Data, Instruction, Unified
  long long bytes = 0;
  int shared_by_cpus = 1;
};

struct MachineInfo {
  std::string hostname;
  std::string cpu_model;
  int logical_cpus = 0;   // online
  int usable_cpus = 0;    // in this process's affinity mask
  std::vector<CacheLevel> caches;
  std::string cache_source;  // "sysfs", "cpuid" (the C library's reading, no sharing), "none"
  long long last_level_cache_bytes() const;
  // The largest data cache below the last level (L2 where there are three): what a core
  // keeps to itself. 0 where the OS names a single level.
  long long private_cache_bytes() const;
  // The level-1 data cache of a core; 0 where the OS names none.
  long long l1_data_cache_bytes() const;
};

MachineInfo read_machine_info();

// The rank a launcher gave this process (mpiexec's process managers, Open MPI, srun),
// read from its environment before MPI starts; -1 where no launcher set one. What every
// rank would say alike before MPI can tell them apart (a bad command line) is said by
// rank 0 alone.
int launcher_rank();

}  // namespace sextant
