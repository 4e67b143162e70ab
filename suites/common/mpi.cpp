#include "suites/common/mpi.hpp"

#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/bfloat16.hpp"

namespace sextant {

void mpi_fail(int code, const char* expr, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + expr + " failed: " + text);
}

void wait(MPI_Request& request, WaitMode mode) { wait_all({&request, 1}, mode); }

void wait_all(std::span<MPI_Request> requests, WaitMode mode) {
  if (mode == WaitMode::blocking) {
    SEXTANT_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(),
                                  MPI_STATUSES_IGNORE));
    return;
  }
  for (;;) {
    int done = 0;
    SEXTANT_MPI_CHECK(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                                  MPI_STATUSES_IGNORE));
    if (done) return;
    if (mode == WaitMode::doze) std::this_thread::sleep_for(std::chrono::microseconds(200));
    else sched_yield();
  }
}

void barrier(MPI_Comm comm, WaitMode mode) {
  if (mode == WaitMode::blocking) {
    SEXTANT_MPI_CHECK(MPI_Barrier(comm));
    return;
  }
  MPI_Request r;
  SEXTANT_MPI_CHECK(MPI_Ibarrier(comm, &r));
  wait(r, mode);
}

void bcast(void* data, int count, MPI_Datatype type, int root, MPI_Comm comm, WaitMode mode) {
  MPI_Request r;
  SEXTANT_MPI_CHECK(MPI_Ibcast(data, count, type, root, comm, &r));
  wait(r, mode);
}

void allreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
               WaitMode mode) {
  MPI_Request r;
  SEXTANT_MPI_CHECK(MPI_Iallreduce(in, out, count, type, op, comm, &r));
  wait(r, mode);
}

void gather(const void* in, int count, MPI_Datatype type, void* out, int root, MPI_Comm comm,
            WaitMode mode) {
  MPI_Request r;
  SEXTANT_MPI_CHECK(MPI_Igather(in, count, type, out, count, type, root, comm, &r));
  wait(r, mode);
}

namespace {
void add_bfloat16(void* in, void* inout, int* count, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *count; ++i) b[i] = bf16::from_float(bf16::to_float(a[i]) + bf16::to_float(b[i]));
}
}  // namespace

MPI_Op bfloat16_sum() {
  static const MPI_Op op = [] {
    MPI_Op o;
    SEXTANT_MPI_CHECK(MPI_Op_create(&add_bfloat16, /*commute=*/1, &o));
    return o;
  }();
  return op;
}

bool any_rank(bool mine, MPI_Comm comm, WaitMode mode) {
  const int in = mine ? 1 : 0;
  int out = 0;
  allreduce(&in, &out, 1, MPI_INT, MPI_LOR, comm, mode);
  return out != 0;
}

int comm_rank(MPI_Comm comm) {
  int r = 0;
  SEXTANT_MPI_CHECK(MPI_Comm_rank(comm, &r));
  return r;
}

int comm_size(MPI_Comm comm) {
  int s = 0;
  SEXTANT_MPI_CHECK(MPI_Comm_size(comm, &s));
  return s;
}

void abort_all(const std::string& line) {
  const std::string whole = line.empty() || line.back() != '\n' ? line + "\n" : line;
  const ssize_t written [[maybe_unused]] = ::write(STDERR_FILENO, whole.data(), whole.size());
  // The line goes through the launcher's proxy, which MPI_Abort has kill the job: on a
  // loaded machine the proxy was killed before it forwarded the line, and the user got
  // exit 1 with no reason (seen in cli.full_disk). A moment lets it forward.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort does not return; the compiler is told so here
}

}  // namespace sextant
