#pragma once
// MPI helpers shared by the measuring suites: checked calls, and waits that can
// yield the core. With more ranks than cores, MPICH's busy polling starves the
// rank that would make progress (a 4-rank barrier on 2 cores takes ~8 ms instead
// of microseconds); polling with MPI_Test and sched_yield keeps such runs usable.
#include <mpi.h>

#include <span>
#include <string>

#include "core/error.hpp"

namespace sextant {

[[noreturn]] void mpi_fail(int code, const char* expr, const char* file, int line);

#define SEXTANT_MPI_CHECK(call)                                                  \
  do {                                                                           \
    int sextant_mpi_rc_ = (call);                                                \
    if (sextant_mpi_rc_ != MPI_SUCCESS)                                          \
      ::sextant::mpi_fail(sextant_mpi_rc_, #call, __FILE__, __LINE__);           \
  } while (0)

// blocking: the library's own wait (MPICH polls). yield: test and sched_yield between
// tests, so that oversubscribed ranks pass the CPU to one with work. doze: test every
// 200 us, asleep between, for a rank with nothing to do but wait for the others (outside
// a rank sweep's sub-communicator): it leaves the CPUs to the ranks being measured.
enum class WaitMode { blocking, yield, doze };

void wait(MPI_Request& request, WaitMode mode);
void wait_all(std::span<MPI_Request> requests, WaitMode mode);

// Harness-side collectives (not the ones measured) that honour the wait mode.
void barrier(MPI_Comm comm, WaitMode mode);
void bcast(void* data, int count, MPI_Datatype type, int root, MPI_Comm comm, WaitMode mode);
void allreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
               WaitMode mode);
void gather(const void* in, int count, MPI_Datatype type, void* out, int root, MPI_Comm comm,
            WaitMode mode);

// The sum of bfloat16 values (core/bfloat16.hpp), sent as MPI_UINT16_T: each pair added
// in float32 and rounded back, as a reduction in that format does. MPI has no bfloat16
// (MPICH 4.0's MPIX_C_FLOAT16 is half precision, and its reduction aborts in the
// datatype engine), so a user-defined operation; created on first use, kept to the end.
MPI_Op bfloat16_sum();

// True on every rank when it is true on any (a collective).
bool any_rank(bool mine, MPI_Comm comm, WaitMode mode);

int comm_rank(MPI_Comm comm);
int comm_size(MPI_Comm comm);

// Ends every rank after one rank's fatal error: the line goes to stderr in a single
// write, then MPI_Abort. The launcher forwards what is in the pipe when the abort
// reaches it; a line written in pieces lost all but its first piece in a CI run.
[[noreturn]] void abort_all(const std::string& line);

}  // namespace sextant
