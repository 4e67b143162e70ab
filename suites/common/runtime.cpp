#include "suites/common/runtime.hpp"

#include <Kokkos_Core.hpp>
#include <dlfcn.h>
#if defined(_OPENMP)
#include <omp.h>
#endif
#include <sched.h>
#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>
#elif defined(KOKKOS_ENABLE_HIP)
#include <hip/hip_runtime_api.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <ctime>
#include <cstdio>
#include <set>
#include <sstream>

#include "core/allocator.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "kernels/fp_env.hpp"
#include "kernels/registry.hpp"
#include "suites/common/mpi.hpp"


extern "C" char** environ;
extern const char* const sextant_git_revision;  // generated at build time

namespace sextant {
namespace {

std::string first_line_value(const std::string& text, const std::string& key) {
  auto at = text.find(key);
  if (at == std::string::npos) return "";
  auto start = at + key.size();
  auto end = text.find('\n', start);
  std::string v = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  v.erase(0, v.find_first_not_of(" \t:"));
  v.erase(v.find_last_not_of(" \t\r") + 1);
  return v;
}

// "host-a:0-1,host-b:2-3": which ranks run where.
std::string rank_placement(MPI_Comm comm, const std::string& host) {
  int size = comm_size(comm), rank = comm_rank(comm);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  std::strncpy(name, host.c_str(), MPI_MAX_PROCESSOR_NAME - 1);
  std::vector<char> all(rank == 0 ? static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME : 1);
  SEXTANT_MPI_CHECK(MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                               MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm));
  std::string out;
  if (rank == 0) {
    std::string prev;
    int first = 0;
    auto flush = [&](int last) {
      if (!out.empty()) out += ',';
      out += prev;
      out += ':';
      out += std::to_string(first);
      if (last > first) {
        out += '-';
        out += std::to_string(last);
      }
    };
    for (int r = 0; r < size; ++r) {
      std::string h(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
      if (r > 0 && h != prev) flush(r - 1);
      if (r == 0 || h != prev) {
        prev = h;
        first = r;
      }
    }
    flush(size - 1);
  }
  int len = static_cast<int>(out.size());
  SEXTANT_MPI_CHECK(MPI_Bcast(&len, 1, MPI_INT, 0, comm));
  out.resize(len);
  SEXTANT_MPI_CHECK(MPI_Bcast(out.data(), len, MPI_CHAR, 0, comm));
  return out;
}

std::string command_line(int argc, char** argv) {
  std::string cmd;
  for (int i = 0; i < argc; ++i) {
    if (i) cmd += ' ';
    cmd += argv[i];
  }
  return cmd;
}

}  // namespace

MpiLibrary mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  MpiLibrary lib;
  lib.full = std::string(text, len);
  lib.full.erase(lib.full.find_last_not_of(" \n\r\t") + 1);
  if (lib.full.find("MPICH") != std::string::npos) {
    lib.name = "MPICH";
    lib.version = first_line_value(lib.full, "MPICH Version:");
    lib.device = first_line_value(lib.full, "MPICH Device:");
  } else if (lib.full.find("Open MPI") != std::string::npos) {
    lib.name = "Open MPI";
    auto v = lib.full.find('v');
    lib.version = v == std::string::npos ? "" : lib.full.substr(v + 1, lib.full.find_first_of(", ", v) - v - 1);
  } else {
    lib.name = lib.full.substr(0, lib.full.find('\n'));
  }
  return lib;
}

KokkosInfo kokkos_info() {
  KokkosInfo k;
  k.version = std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) +
              "." + std::to_string(KOKKOS_VERSION % 100);
  k.backend = Kokkos::DefaultExecutionSpace::name();
  k.concurrency = Kokkos::DefaultExecutionSpace().concurrency();
#ifdef KOKKOS_ENABLE_SERIAL
  k.enabled_spaces.push_back("Serial");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  k.enabled_spaces.push_back("OpenMP");
#endif
#ifdef KOKKOS_ENABLE_THREADS
  k.enabled_spaces.push_back("Threads");
#endif
#ifdef KOKKOS_ENABLE_CUDA
  k.enabled_spaces.push_back("Cuda");
#endif
#ifdef KOKKOS_ENABLE_HIP
  k.enabled_spaces.push_back("HIP");
#endif
#ifdef KOKKOS_ENABLE_SYCL
  k.enabled_spaces.push_back("SYCL");
#endif
  return k;
}

std::string compiler_id() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("gcc ") + __VERSION__;
#else
  return "unknown";
#endif
}

std::string git_revision() { return sextant_git_revision; }

std::string utc_now_iso() {
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::map<std::string, std::string> behaviour_environment() {
  static const char* prefixes[] = {"MPIR_CVAR_", "MPICH_", "HYDRA_", "UCX_",   "OMP_",
                                   "KOKKOS_",    "GOMP_",  "SLURM_JOB", "SLURM_NTASKS",
                                   "SLURM_TASKS_PER_NODE", "SLURM_NNODES", "SLURM_CLUSTER_NAME",
                                   "SEXTANT_",   "MALLOC_", "GLIBC_TUNABLES"};
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string key = kv.substr(0, eq);
    for (const char* p : prefixes)
      if (key.rfind(p, 0) == 0) env[key] = kv.substr(eq + 1);
  }
  return env;
}

int visible_devices() {
#if defined(KOKKOS_ENABLE_CUDA)
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
#elif defined(KOKKOS_ENABLE_HIP)
  int n = 0;
  return hipGetDeviceCount(&n) == hipSuccess ? n : 0;
#else
  return 0;  // a host backend: the ranks share the node's cores instead
#endif
}

// Ranks on a node spread over its devices (local rank modulo their count) instead of
// all driving device 0; SEXTANT_DEVICE pins one explicitly (e.g. from a site's binding
// script). -1: the backend has no devices.
static int choose_device(int local_rank) {
  const int count = visible_devices();
  if (count <= 0) return -1;
  if (const char* pinned = std::getenv("SEXTANT_DEVICE"); pinned && *pinned) {
    char* end = nullptr;
    const long d = std::strtol(pinned, &end, 10);
    if (*end != '\0' || d < 0 || d >= count)
      throw Error("SEXTANT_DEVICE=" + std::string(pinned) + ": expected a device index from 0 to " +
                  std::to_string(count - 1));
    return int(d);
  }
  return local_rank % count;
}

// A threaded BLAS (the vendor path's GEMMs) starts as many threads as the node has
// cores in every rank unless told otherwise: give it the rank's share, as Kokkos gets.
// Looked up at run time, so the runtime links no BLAS. Returns what runs ("" when no
// known BLAS is loaded) and, for OpenBLAS, the kernel family it chose: an OpenBLAS
// older than the CPU falls back to generic kernels (0.3.21 runs "Prescott", SSE3, on a
// Sapphire Rapids core: a quarter of its rate), which a user must hear about.
struct BlasSetup {
  std::string description, warning;
  void warn(const std::string& text) { warning += (warning.empty() ? "" : "; ") + text; }
};
static BlasSetup configure_blas(int threads) {
  BlasSetup b;
  const std::string n = ", " + std::to_string(threads) + " threads";
  if (void* f = dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) {
    reinterpret_cast<void (*)(int)>(f)(threads);
    std::string core = "unknown", threading = "unknown";
    if (void* g = dlsym(RTLD_DEFAULT, "openblas_get_corename")) core = reinterpret_cast<char* (*)()>(g)();
    if (void* g = dlsym(RTLD_DEFAULT, "openblas_get_parallel")) {
      const int parallel = reinterpret_cast<int (*)()>(g)();
      threading = parallel == 0 ? "sequential" : parallel == 1 ? "pthreads" : parallel == 2 ? "OpenMP" : "unknown";
    }
    b.description = "OpenBLAS (" + core + " kernels, " + threading + " threading)" + n;
    // Two thread pools on the rank's cores: after a Kokkos (OpenMP) region libgomp's
    // idle workers spin while OpenBLAS's own wait for the scheduler.
    if (threading == "pthreads" && threads > 1)
      b.warn("OpenBLAS runs its own pthreads beside the OpenMP threads of the kernels (" + std::to_string(threads) +
             " threads per rank): a GEMM right after a portable kernel can wait milliseconds for them. "
             "OpenBLAS's OpenMP build (Debian: libopenblas0-openmp; SEXTANT_BLAS_DIR at configure time) "
             "shares one pool");
    static const std::set<std::string> generic{"Prescott", "Katmai", "Coppermine", "Northwood", "Core2",
                                               "Penryn", "Dunnington", "Nehalem", "Atom", "Barcelona"};
#if defined(__x86_64__) || defined(__i386__)
    if (generic.count(core) && (__builtin_cpu_supports("avx512f") || __builtin_cpu_supports("avx2")))
      b.warn("OpenBLAS runs its generic " + core + " kernels on a CPU with " +
             (__builtin_cpu_supports("avx512f") ? "AVX-512" : "AVX2") +
             " (it does not know this CPU model): the vendor path's GEMMs run at a fraction of their rate. "
             "OPENBLAS_CORETYPE=" + (__builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell") +
             " selects the right ones; the measurements stay true to what ran either way");
#endif
  } else if (void* f = dlsym(RTLD_DEFAULT, "bli_thread_set_num_threads")) {
    reinterpret_cast<void (*)(int)>(f)(threads);
    b.description = "BLIS" + n;
  } else if (void* f = dlsym(RTLD_DEFAULT, "MKL_Set_Num_Threads")) {
    reinterpret_cast<void (*)(int)>(f)(threads);
    b.description = "MKL" + n;
  }
  return b;
}

Runtime::Runtime(int argc, char** argv) : argc_(argc), argv_(argv) {
  const std::string allocator = keep_freed_memory();  // before MPI and Kokkos allocate
  int provided = 0;
  SEXTANT_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
  SEXTANT_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  // libgomp's default when OMP_PROC_BIND is unset is "false"; saying so explicitly
  // keeps Kokkos 3.x from printing its binding advice on every start.
  setenv("OMP_PROC_BIND", "false", 0);
  rank_ = comm_rank(MPI_COMM_WORLD);
  size_ = comm_size(MPI_COMM_WORLD);
  SEXTANT_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_));
  ranks_on_node_ = comm_size(node_);
  machine_ = read_machine_info();
  // The CPUs this node's ranks may run on: the union of their affinity masks. A launcher
  // that binds each rank to its own core (mpiexec -bind-to core, srun --cpu-bind) leaves
  // every rank one CPU of its own, not a node of one CPU.
  cpu_set_t mine, node_set;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0)
    for (int c = 0; c < machine_.logical_cpus && c < CPU_SETSIZE; ++c) CPU_SET(c, &mine);
  SEXTANT_MPI_CHECK(MPI_Allreduce(&mine, &node_set, sizeof mine, MPI_BYTE, MPI_BOR, node_));
  node_cpus_ = CPU_COUNT(&node_set);

  // Threads per rank: OMP_NUM_THREADS when set, else the node's CPUs shared among its
  // ranks (at most the rank's own), so that ranks x threads never oversubscribes the
  // node by default.
  const char* omp = std::getenv("OMP_NUM_THREADS");
  threads_ = omp && std::atoi(omp) > 0
                 ? std::atoi(omp)
                 : std::max(1, std::min(machine_.usable_cpus, node_cpus_ / ranks_on_node_));
  // Kokkos sees no sextant options, only the thread count.
#if KOKKOS_VERSION >= 40000
  std::string threads_arg = "--kokkos-num-threads=" + std::to_string(threads_);
#else
  std::string threads_arg = "--kokkos-threads=" + std::to_string(threads_);
#endif
  device_ = choose_device(comm_rank(node_));
  std::string device_arg = "--kokkos-device-id=" + std::to_string(device_);
  char name[] = "sextant";
#if defined(_OPENMP)
  // The OpenMP runtime's own default team is every CPU the process may use, and Kokkos
  // counts its threads with a region of that default size before it applies the count
  // it was given: a rank of one thread kept an idle second worker, which spins on its
  // partner's CPU for as long as the wait policy says (under OMP_WAIT_POLICY=active,
  // for the whole run: 2 ranks on 2 CPUs then ran their steps 2-10x slower). The rank's
  // own count from the start leaves no such worker.
  omp_set_num_threads(threads_);
#endif
  char* kargv[] = {name, threads_arg.data(), device_ >= 0 ? device_arg.data() : nullptr, nullptr};
  int kargc = device_ >= 0 ? 3 : 2;
  Kokkos::initialize(kargc, kargv);
  subnormals_ = kernels::flush_subnormals(threads_);
  kernels::set_host_caches({machine_.l1_data_cache_bytes(), machine_.private_cache_bytes()});
  try {  // a malformed SEXTANT_GEMM_BLOCKS is said before anything is measured
    kernels::gemm_blocks(kernels::Dtype::float64);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const BlasSetup blas = configure_blas(threads_);
  if (!blas.warning.empty() && rank_ == 0) std::fprintf(stderr, "sextant: WARNING: %s\n", blas.warning.c_str());
  int node_leader = comm_rank(node_) == 0 ? 1 : 0;
  SEXTANT_MPI_CHECK(MPI_Allreduce(&node_leader, &nodes_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));

  // Oversubscribed: more threads on the node than its ranks' CPUs, or more threads in
  // one rank than its own mask allows.
  int local_over = ranks_on_node_ * threads_ > node_cpus_ || threads_ > machine_.usable_cpus ? 1 : 0, any_over = 0;
  SEXTANT_MPI_CHECK(MPI_Allreduce(&local_over, &any_over, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  oversubscribed_ = any_over != 0;

  auto lib = mpi_library();
  auto kk = kokkos_info();
  std::string cmd = command_line(argc, argv);
  auto& f = provenance_.fields;
  f["host"] = machine_.hostname;
  f["cpu_model"] = machine_.cpu_model;
  f["cores"] = std::to_string(node_cpus_);
  f["mpi_library"] = lib.name;
  f["mpi_version"] = lib.version;
  f["mpi_device"] = lib.device;
  f["kokkos_version"] = kk.version;
  f["kokkos_backend"] = kk.backend;
  f["compiler"] = compiler_id();
  f["git_revision"] = git_revision();
  f["command_line"] = cmd;
  f["date_utc"] = utc_now_iso();
  f["rank_placement"] = rank_placement(MPI_COMM_WORLD, machine_.hostname);
  f["ranks_per_node"] = std::to_string(ranks_on_node_);
  f["nodes"] = std::to_string(nodes_);
  f["oversubscribed"] = oversubscribed_ ? "yes" : "no";
  f["threads_per_rank"] = std::to_string(threads_);
  if (!blas.description.empty()) f["blas"] = blas.description;
  f["allocator"] = allocator;
  f["device"] = device_ >= 0 ? std::to_string(device_) + " of " + std::to_string(visible_devices()) +
                                   " (local rank modulo the node's devices, or SEXTANT_DEVICE)"
                             : "none (host backend)";
  f["subnormals"] = subnormals_;
  f["sextant_version"] = SEXTANT_VERSION;
  provenance_.environment = behaviour_environment();
  provenance_.ranks = size_;
}

Runtime::~Runtime() {
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
  Kokkos::finalize();
  MPI_Finalize();
}

Provenance local_provenance(int argc, char** argv) {
  Provenance p;
  auto m = read_machine_info();
  auto lib = mpi_library();
  std::string cmd = command_line(argc, argv);
  p.fields = {{"host", m.hostname},
              {"cpu_model", m.cpu_model},
              {"cores", std::to_string(m.usable_cpus)},
              {"mpi_library", lib.name},
              {"mpi_version", lib.version},
              {"kokkos_version", std::to_string(KOKKOS_VERSION / 10000) + "." +
                                     std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
                                     std::to_string(KOKKOS_VERSION % 100)},
              {"kokkos_backend", Kokkos::DefaultExecutionSpace::name()},
              {"compiler", compiler_id()},
              {"git_revision", git_revision()},
              {"command_line", cmd},
              {"date_utc", utc_now_iso()},
              {"rank_placement", m.hostname + ":0"},
              {"sextant_version", SEXTANT_VERSION}};
  p.environment = behaviour_environment();
  p.ranks = 1;
  return p;
}

}  // namespace sextant
