#pragma once
// One harness, a small descriptor per benchmark (after nccl-tests): a descriptor
// says how big its buffers are, how to run one iteration, how its bus bandwidth
// relates to its algorithm bandwidth, and what every received element must be.
// Adding a collective = one file in benchmarks/ (the build finds it) + its declaration
// and entry in registry.cpp: the harness reads every fact about it from the
// descriptor. A cost model for it, if it has one, is models/collectives.cpp's.
#include <mpi.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/schema.hpp"
#include "suites/common/mpi.hpp"
#include "suites/comm/buffer.hpp"
#include "suites/comm/dtype.hpp"

namespace sextant::comm {

enum class Family { pt2pt, collective };
using sextant::SizeUnit;  // core/schema: the whole vector or each rank's block

// Everything a descriptor needs for one message size.
struct Case {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  Dtype dtype = Dtype::byte;
  Reduction reduction = Reduction::sum;
  std::size_t count = 0;  // elements per rank, the size's unit (see docs/comm-suite.md)
  bool in_place = false;
  int root = 0;
  int window = 64;        // messages in flight for bandwidth benchmarks
  WaitMode wait = WaitMode::blocking;
  bool nonblocking_form = false;  // a collective runs as MPI_I<coll> + wait (Options::time_nonblocking)
  Buffer* send = nullptr;
  Buffer* recv = nullptr;
  // late_receive: how long the receiver computes (no MPI call) before it posts.
  double receive_delay = 0;
  // Set by a run that times part of its iteration itself (late_receive: the receiver
  // from its post on); < 0: the harness times the whole iteration.
  double timed_seconds = -1;

  MPI_Datatype type() const { return info(dtype).mpi; }
  int icount() const { return static_cast<int>(count); }
  void* sbuf() const { return send->data(); }
  void* rbuf() const { return recv->data(); }
  // MPI_IN_PLACE where this rank passes it, else the send buffer.
  const void* sbuf_or_in_place(bool rank_uses_in_place = true) const {
    return in_place && rank_uses_in_place ? MPI_IN_PLACE : send->data();
  }
};

// What element i of this rank's receive buffer must hold after one iteration.
struct Expectation {
  double value = 0;
  double magnitude = 0;  // sum of |terms|, for the floating-point tolerance
  int terms = 1;         // values combined (1 = a copy)
};

struct Benchmark {
  std::string_view name;
  Family family = Family::collective;
  bool typed = true;     // sized in elements of a datatype, else in bytes
  bool reduces = false;  // takes a reduction operator
  // Bytes counted for algbw (nccl-tests convention) for `count` elements per rank.
  std::size_t (*data_elements)(std::size_t count, int p) = nullptr;
  double (*busbw_factor)(int p) = nullptr;
  std::size_t (*send_elements)(std::size_t count, int p) = nullptr;
  std::size_t (*recv_elements)(std::size_t count, int p) = nullptr;
  // One iteration honouring c.wait; for collectives that have it, the non-blocking start.
  void (*run)(Case& c) = nullptr;
  void (*start)(Case& c, MPI_Request* request) = nullptr;
  // Element offset in recv where this rank's send data sits for MPI_IN_PLACE, or
  // nothing when this benchmark (or this rank) has no in-place form.
  std::optional<std::size_t> (*in_place_offset)(const Case& c) = nullptr;
  std::optional<Expectation> (*expect)(const Case& c, std::size_t i) = nullptr;
  // What the receive buffer holds before a checked iteration when the operation reads
  // it (MPI_Reduce_local); nullptr = poisoned, so unwritten elements are caught.
  double (*initial_recv)(const Case& c, std::size_t i) = nullptr;
  double time_divisor = 1;  // e.g. 2 for a ping-pong round trip -> one-way latency
  bool windowed = false;    // data_elements counts once per message of the window
  bool nonblocking = false; // timed as start + wait; also measured against overlapped compute
  SizeUnit size_unit = SizeUnit::vector;
  bool sized = true;        // false: no message (barrier): measured once, as size 0
  // The receiver posts late (Case::receive_delay, set by the harness to twice what the
  // message takes a waiting receiver, from the warm-up): times what receiving costs once
  // the message has had time to arrive.
  bool late_receiver = false;
  // The MPI function a blocking collective calls ("MPI_Allreduce"): the library's
  // algorithm control for it is found by this name (library_algorithms.hpp).
  std::string_view mpi_function = {};
};

// Every measurable benchmark, blocking collectives and pt2pt first; non-blocking
// variants carry the name prefix "i" and reuse their blocking descriptor's check.
std::span<const Benchmark> registry();
const Benchmark* find_benchmark(std::string_view name);
bool is_nonblocking(const Benchmark& b);

// Helpers the descriptors share.
namespace detail {
inline std::size_t same(std::size_t count, int) { return count; }
inline std::size_t times_p(std::size_t count, int p) { return count * static_cast<std::size_t>(p); }
inline double one(int) { return 1.0; }
inline double p_minus_1_over_p(int p) { return p > 0 ? double(p - 1) / p : 0.0; }
inline double two_p_minus_1_over_p(int p) { return p > 0 ? 2.0 * (p - 1) / p : 0.0; }
// Runs a collective's non-blocking start and waits, or its blocking form.
void run_collective(Case& c, void (*blocking)(Case&), void (*start)(Case&, MPI_Request*));
// The reduction of pattern(dtype, q, i) over the ranks q < ranks (all by default).
Expectation reduced(const Case& c, std::size_t i, int ranks = -1);
}  // namespace detail

}  // namespace sextant::comm
