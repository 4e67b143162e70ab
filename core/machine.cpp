#include "core/machine.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <fstream>
#include <sstream>

namespace sextant {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  }
  return "unknown";
}

long long parse_cache_size(const std::string& text) {  // "32K", "1024K", "32768K", "8M"
  if (text.empty()) return 0;
  long long v = std::atoll(text.c_str());
  switch (text.back()) {
    case 'K': return v << 10;
    case 'M': return v << 20;
    case 'G': return v << 30;
    default: return v;
  }
}

int count_cpu_list(const std::string& list) {  // "0-3,8,10-11"
  int count = 0;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto dash = item.find('-');
    if (dash == std::string::npos)
      count += item.empty() ? 0 : 1;
    else
      count += std::atoi(item.c_str() + dash + 1) - std::atoi(item.c_str()) + 1;
  }
  return std::max(count, 1);
}

std::vector<CacheLevel> sysfs_caches() {
  std::vector<CacheLevel> out;
  for (int i = 0;; ++i) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::string level = read_line(dir + "level");
    if (level.empty()) break;
    CacheLevel c;
    c.level = std::atoi(level.c_str());
    c.type = read_line(dir + "type");
    c.bytes = parse_cache_size(read_line(dir + "size"));
    c.shared_by_cpus = count_cpu_list(read_line(dir + "shared_cpu_list"));
    out.push_back(c);
  }
  return out;
}

// Where the kernel publishes no cache topology (some VMs' kernels), the sizes the C
// library reads from the CPU itself (CPUID on x86). Sharing is not in them: the levels
// below the last are taken as a core's own, the last as shared by every online CPU.
std::vector<CacheLevel> libc_caches(int online_cpus) {
  std::vector<CacheLevel> out;
  auto add = [&](int level, const char* type, long bytes, int shared) {
    if (bytes > 0) out.push_back({level, type, bytes, shared});
  };
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
  add(1, "Data", sysconf(_SC_LEVEL1_DCACHE_SIZE), 1);
  add(1, "Instruction", sysconf(_SC_LEVEL1_ICACHE_SIZE), 1);
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  add(2, "Unified", l2, l3 > 0 ? 1 : online_cpus);
  add(3, "Unified", l3, online_cpus);
#else
  (void)add, (void)online_cpus;
#endif
  return out;
}

}  // namespace

long long MachineInfo::last_level_cache_bytes() const {
  long long best = 0;
  int best_level = 0;
  for (const auto& c : caches)
    if (c.type != "Instruction" && c.level >= best_level) {
      best_level = c.level;
      best = c.bytes;
    }
  return best;
}

long long MachineInfo::private_cache_bytes() const {
  int last = 0;
  for (const auto& c : caches)
    if (c.type != "Instruction") last = std::max(last, c.level);
  long long best = 0;
  int best_level = 0;
  for (const auto& c : caches)
    if (c.type != "Instruction" && c.level < last && c.level >= best_level) {
      best_level = c.level;
      best = c.bytes;
    }
  return best;
}

long long MachineInfo::l1_data_cache_bytes() const {
  for (const auto& c : caches)
    if (c.level == 1 && c.type != "Instruction") return c.bytes;
  return 0;
}

MachineInfo read_machine_info() {
  MachineInfo m;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  m.hostname = host;
  m.cpu_model = cpu_model();
  m.logical_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  cpu_set_t set;
  CPU_ZERO(&set);
  m.usable_cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : m.logical_cpus;
  m.caches = sysfs_caches();
  m.cache_source = "sysfs";
  if (m.caches.empty()) {
    m.caches = libc_caches(m.logical_cpus);
    m.cache_source = m.caches.empty() ? "none" : "cpuid";
  }
  return m;
}

int launcher_rank() {
  // The MPI launcher's own variable first: inside a batch job SLURM_PROCID is the batch
  // step's (0 in every process mpiexec starts there).
  for (const char* name : {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long rank = std::strtol(value, &end, 10);
    if (*end == '\0' && rank >= 0 && rank <= std::numeric_limits<int>::max()) return static_cast<int>(rank);
  }
  return -1;
}

}  // namespace sextant
