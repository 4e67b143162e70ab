#pragma once
// The measuring side of sextant: MPI and Kokkos brought up once per process, the
// provenance every results file records, and what is known about rank placement.
#include <mpi.h>

#include <string>
#include <vector>

#include "core/machine.hpp"
#include "core/schema.hpp"

namespace sextant {

class Runtime {
 public:
  Runtime(int argc, char** argv);  // argv only for the recorded command line
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  MPI_Comm world() const { return MPI_COMM_WORLD; }
  MPI_Comm node() const { return node_; }  // ranks sharing memory with this one
  int ranks_on_node() const { return ranks_on_node_; }
  int nodes() const { return nodes_; }
  int threads_per_rank() const { return threads_; }
  int node_cpus() const { return node_cpus_; }  // the union of this node's ranks' CPU masks
  int device() const { return device_; }  // the device this rank drives; -1 on host backends
  int argc() const { return argc_; }
  char** argv() const { return argv_; }
  const MachineInfo& machine() const { return machine_; }

  // More threads on a node than its ranks' CPUs (or in a rank than its own mask):
  // timings are not meaningful, and waits must yield the core (suites/common/mpi.hpp).
  bool oversubscribed() const { return oversubscribed_; }

  // Gathered from all ranks: valid on every rank.
  const Provenance& provenance() const { return provenance_; }

 private:
  int rank_ = 0, size_ = 1, ranks_on_node_ = 1, nodes_ = 1, threads_ = 1, device_ = -1, node_cpus_ = 1;
  int argc_ = 0;
  char** argv_ = nullptr;
  MPI_Comm node_ = MPI_COMM_NULL;
  bool oversubscribed_ = false;
  const char* subnormals_ = "";
  MachineInfo machine_;
  Provenance provenance_;
};

// MPI library and version, e.g. {"MPICH", "4.0.2", "ch4:ucx"}; works before MPI_Init.
struct MpiLibrary {
  std::string name, version, device, full;
};
MpiLibrary mpi_library();

struct KokkosInfo {
  std::string version;    // "3.4.1"
  std::string backend;    // default execution space, e.g. "OpenMP"
  std::vector<std::string> enabled_spaces;
  int concurrency = 1;
};
KokkosInfo kokkos_info();  // needs Kokkos initialised

std::string compiler_id();
// Devices the Kokkos backend can drive from this process (CUDA, HIP); 0 on host backends.
int visible_devices();
std::string git_revision();
std::string utc_now_iso();

// Environment variables that change MPI, OpenMP, Kokkos or UCX behaviour, plus the
// Slurm job layout when running under Slurm.
std::map<std::string, std::string> behaviour_environment();

}  // namespace sextant

namespace sextant {
// Provenance of a process that does not measure (fit, merge): no MPI_Init needed.
Provenance local_provenance(int argc, char** argv);
}  // namespace sextant
