// Point-to-point benchmarks (sized in bytes). Pairs are (0, 1) for the single-pair
// benchmarks and (r, r + p/2) for the multi-pair ones, so with one rank per node
// first and the rest after, the pairs cross the node boundary.
#include <sched.h>

#include <vector>

#include "suites/comm/benchmarks/collectives.hpp"

namespace sextant::comm::benchmarks {
namespace {

constexpr int tag = 77;

// The rank this one is paired with, or -1 when it sits out.
int single_pair_partner(const Case& c) { return c.rank == 0 ? 1 : c.rank == 1 ? 0 : -1; }
int multi_pair_partner(const Case& c) {
  int half = c.size / 2;
  if (c.rank < half) return c.rank + half;
  if (c.rank < 2 * half) return c.rank - half;
  return -1;
}
bool leads(const Case& c, int partner) { return c.rank < partner; }

void pingpong_with(Case& c, int partner) {
  if (partner < 0) return;
  MPI_Request r;
  if (leads(c, partner)) {
    SEXTANT_MPI_CHECK(MPI_Isend(c.sbuf(), c.icount(), MPI_BYTE, partner, tag, c.comm, &r));
    wait(r, c.wait);
    SEXTANT_MPI_CHECK(MPI_Irecv(c.rbuf(), c.icount(), MPI_BYTE, partner, tag, c.comm, &r));
    wait(r, c.wait);
  } else {
    SEXTANT_MPI_CHECK(MPI_Irecv(c.rbuf(), c.icount(), MPI_BYTE, partner, tag, c.comm, &r));
    wait(r, c.wait);
    SEXTANT_MPI_CHECK(MPI_Isend(c.sbuf(), c.icount(), MPI_BYTE, partner, tag, c.comm, &r));
    wait(r, c.wait);
  }
}

// The leader sends one message; its partner computes (no MPI call) for receive_delay,
// then receives: the partner's time from its post is what a receiver pays for a message
// that was sent while it computed. An eager protocol has delivered it (a copy remains); a
// rendezvous one has only announced it, and the handshake and the transfer start at the
// post. The step predictor charges a pipeline stage this for each message it receives.
void late_receive_with(Case& c, int partner) {
  c.timed_seconds = 0;  // a rank outside the pair, and the leader, time nothing
  if (partner < 0) return;
  MPI_Request r;
  if (leads(c, partner)) {
    SEXTANT_MPI_CHECK(MPI_Isend(c.sbuf(), c.icount(), MPI_BYTE, partner, tag, c.comm, &r));
    wait(r, c.wait);
    return;
  }
  for (const double until = MPI_Wtime() + c.receive_delay; MPI_Wtime() < until;)
    if (c.wait == WaitMode::yield) sched_yield();
  const double t0 = MPI_Wtime();
  SEXTANT_MPI_CHECK(MPI_Irecv(c.rbuf(), c.icount(), MPI_BYTE, partner, tag, c.comm, &r));
  wait(r, c.wait);
  c.timed_seconds = MPI_Wtime() - t0;
}

// A window of messages from the leader to its partner, then a zero-byte ack (OSU bw).
void window_with(Case& c, int partner, bool both_ways) {
  if (partner < 0) return;
  std::vector<MPI_Request> reqs;
  reqs.reserve(2 * c.window);
  bool sends = leads(c, partner) || both_ways;
  bool receives = !leads(c, partner) || both_ways;
  for (int w = 0; w < c.window; ++w) {
    MPI_Request r;
    if (receives) {
      SEXTANT_MPI_CHECK(MPI_Irecv(c.rbuf(), c.icount(), MPI_BYTE, partner, tag, c.comm, &r));
      reqs.push_back(r);
    }
    if (sends) {
      SEXTANT_MPI_CHECK(MPI_Isend(c.sbuf(), c.icount(), MPI_BYTE, partner, tag, c.comm, &r));
      reqs.push_back(r);
    }
  }
  wait_all(reqs, c.wait);
  MPI_Request ack;
  if (leads(c, partner))
    SEXTANT_MPI_CHECK(MPI_Irecv(nullptr, 0, MPI_BYTE, partner, tag + 1, c.comm, &ack));
  else
    SEXTANT_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, partner, tag + 1, c.comm, &ack));
  wait(ack, c.wait);
}

std::optional<Expectation> from_partner(const Case& c, int partner, std::size_t i) {
  if (partner < 0) return std::nullopt;
  return Expectation{pattern(c.dtype, partner, i)};
}
std::optional<Expectation> from_leader(const Case& c, int partner, std::size_t i) {
  if (partner < 0 || leads(c, partner)) return std::nullopt;
  return Expectation{pattern(c.dtype, partner, i)};
}
std::size_t half_p(std::size_t count, int p) { return count * static_cast<std::size_t>(p / 2); }
std::size_t twice(std::size_t count, int) { return 2 * count; }

}  // namespace

extern const Benchmark pingpong{
    .name = "pingpong",
    .family = Family::pt2pt,
    .typed = false,
    .data_elements = detail::same,
    .busbw_factor = detail::one,
    .send_elements = detail::same,
    .recv_elements = detail::same,
    .run = [](Case& c) { pingpong_with(c, single_pair_partner(c)); },
    .expect = [](const Case& c, std::size_t i) { return from_partner(c, single_pair_partner(c), i); },
    .time_divisor = 2,
};

extern const Benchmark late_receive{
    .name = "late_receive",
    .family = Family::pt2pt,
    .typed = false,
    .data_elements = detail::same,
    .busbw_factor = detail::one,
    .send_elements = detail::same,
    .recv_elements = detail::same,
    .run = [](Case& c) { late_receive_with(c, single_pair_partner(c)); },
    .expect = [](const Case& c, std::size_t i) { return from_leader(c, single_pair_partner(c), i); },
    .late_receiver = true,
};

extern const Benchmark bandwidth{
    .name = "bandwidth",
    .family = Family::pt2pt,
    .typed = false,
    .data_elements = detail::same,
    .busbw_factor = detail::one,
    .send_elements = detail::same,
    .recv_elements = detail::same,
    .run = [](Case& c) { window_with(c, single_pair_partner(c), false); },
    .expect = [](const Case& c, std::size_t i) { return from_leader(c, single_pair_partner(c), i); },
    .windowed = true,
};

extern const Benchmark bibandwidth{
    .name = "bibandwidth",
    .family = Family::pt2pt,
    .typed = false,
    .data_elements = twice,
    .busbw_factor = detail::one,
    .send_elements = detail::same,
    .recv_elements = detail::same,
    .run = [](Case& c) { window_with(c, single_pair_partner(c), true); },
    .expect = [](const Case& c, std::size_t i) { return from_partner(c, single_pair_partner(c), i); },
    .windowed = true,
};

extern const Benchmark multi_latency{
    .name = "multi_latency",
    .family = Family::pt2pt,
    .typed = false,
    .data_elements = detail::same,
    .busbw_factor = detail::one,
    .send_elements = detail::same,
    .recv_elements = detail::same,
    .run = [](Case& c) { pingpong_with(c, multi_pair_partner(c)); },
    .expect = [](const Case& c, std::size_t i) { return from_partner(c, multi_pair_partner(c), i); },
    .time_divisor = 2,
};

extern const Benchmark multi_bandwidth{
    .name = "multi_bandwidth",
    .family = Family::pt2pt,
    .typed = false,
    .data_elements = half_p,  // aggregate over all pairs
    .busbw_factor = detail::one,
    .send_elements = detail::same,
    .recv_elements = detail::same,
    .run = [](Case& c) { window_with(c, multi_pair_partner(c), false); },
    .expect = [](const Case& c, std::size_t i) { return from_leader(c, multi_pair_partner(c), i); },
    .windowed = true,
};

}  // namespace sextant::comm::benchmarks
