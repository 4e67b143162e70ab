// Descriptor facts of the comm suite checked without MPI: the registry, nccl-tests
// bus-bandwidth factors, and every expectation against a serial reference built
// from pattern() alone (what rank q's send element j holds).
#include "suites/comm/benchmark.hpp"
#include "suites/comm/library_algorithms.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace sextant::comm;

const Benchmark& bench(const char* name) {
  const Benchmark* b = find_benchmark(name);
  if (!b) throw std::runtime_error(std::string("no benchmark ") + name);
  return *b;
}

Case make_case(int rank, int size, Dtype dtype, std::size_t count, int root = 0,
               Reduction reduction = Reduction::sum) {
  Case c;
  c.rank = rank;
  c.size = size;
  c.dtype = dtype;
  c.count = count;
  c.root = root;
  c.reduction = reduction;
  return c;
}

// Reference reduction over ranks, written independently of detail::reduced.
double reduce_ref(Reduction r, Dtype t, int size, std::size_t j) {
  std::vector<double> v;
  for (int q = 0; q < size; ++q) v.push_back(pattern(t, q, j));
  double s = 0;
  for (double x : v) s += x;
  switch (r) {
    case Reduction::sum: return s;
    case Reduction::max: return *std::max_element(v.begin(), v.end());
    case Reduction::min: return *std::min_element(v.begin(), v.end());
  }
  return NAN;
}

// Checks that b's expectation for every element of the receive buffer is `ref(i)`.
template <class Ref>
void expect_all(const Benchmark& b, const Case& c, Ref ref) {
  std::size_t n = b.recv_elements(c.count, c.size);
  for (std::size_t i = 0; i < n; ++i) {
    std::optional<double> want = ref(i);
    auto got = b.expect(c, i);
    ASSERT_EQ(got.has_value(), want.has_value()) << b.name << " rank " << c.rank << " element " << i;
    if (want) { EXPECT_EQ(got->value, *want) << b.name << " rank " << c.rank << " element " << i; }
  }
}

const std::vector<std::string> kAll{"pingpong",       "late_receive",    "bandwidth",    "bibandwidth",
                                    "multi_latency",  "multi_bandwidth", "barrier",      "bcast",
                                    "reduce",         "allreduce",       "allgather",    "reduce_scatter",
                                    "alltoall",       "gather",          "scatter",      "reduce_local",
                                    "scan",           "iallreduce",      "iallgather",   "ireduce_scatter",
                                    "ialltoall",      "ibcast"};

TEST(CommRegistry, HoldsEveryBenchmarkOnceAndCompletely) {
  std::set<std::string> names;
  for (const auto& b : registry()) EXPECT_TRUE(names.insert(std::string(b.name)).second) << "duplicate " << b.name;
  EXPECT_EQ(names, std::set<std::string>(kAll.begin(), kAll.end()));
  for (const auto& name : kAll) {
    const Benchmark* b = find_benchmark(name);
    ASSERT_NE(b, nullptr) << name;
    EXPECT_EQ(b->name, name);
    EXPECT_TRUE(b->run && b->data_elements && b->busbw_factor && b->send_elements && b->recv_elements) << name;
    if (name != "barrier") { EXPECT_TRUE(b->expect) << name; }
    const std::set<std::string> kNonblocking{"iallreduce", "iallgather", "ireduce_scatter", "ialltoall", "ibcast"};
    bool nb = kNonblocking.count(name) > 0;
    EXPECT_EQ(is_nonblocking(*b), nb) << name;
    if (nb) {
      EXPECT_TRUE(b->start) << name;
      const Benchmark& blocking = bench(name.substr(1).c_str());  // same descriptor otherwise
      EXPECT_EQ(b->expect, blocking.expect) << name;
      EXPECT_EQ(b->busbw_factor, blocking.busbw_factor) << name;
    }
  }
  EXPECT_EQ(find_benchmark("allreduce2"), nullptr);
  EXPECT_EQ(find_benchmark(""), nullptr);
  EXPECT_EQ(find_benchmark("Allreduce"), nullptr);
}

TEST(CommRegistry, BusBandwidthFactorsMatchNcclTests) {
  for (int p : {3, 4}) {
    const double pm1 = double(p - 1) / p;
    EXPECT_DOUBLE_EQ(bench("allreduce").busbw_factor(p), 2 * pm1) << p;
    for (const char* n : {"reduce_scatter", "allgather", "alltoall", "gather", "scatter"})
      EXPECT_DOUBLE_EQ(bench(n).busbw_factor(p), pm1) << n << " p=" << p;
    for (const char* n : {"bcast", "reduce", "pingpong", "scan"}) EXPECT_DOUBLE_EQ(bench(n).busbw_factor(p), 1.0) << n;
  }
  EXPECT_DOUBLE_EQ(bench("allreduce").busbw_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(bench("allgather").busbw_factor(3), 2.0 / 3.0);
}

TEST(CommRegistry, BufferSizesFollowTheCountConvention) {
  // count = elements per rank (per peer for alltoall, per block for reduce_scatter).
  EXPECT_EQ(bench("allgather").recv_elements(10, 4), 40u);
  EXPECT_EQ(bench("allgather").send_elements(10, 4), 10u);
  EXPECT_EQ(bench("alltoall").send_elements(10, 4), 40u);
  EXPECT_EQ(bench("reduce_scatter").send_elements(10, 4), 40u);
  EXPECT_EQ(bench("scatter").send_elements(10, 4), 40u);
  EXPECT_EQ(bench("scatter").recv_elements(10, 4), 10u);
  EXPECT_EQ(bench("gather").recv_elements(10, 4), 40u);
  EXPECT_EQ(bench("allreduce").data_elements(10, 4), 10u);
  EXPECT_EQ(bench("bibandwidth").data_elements(10, 2), 20u);
  EXPECT_EQ(bench("multi_bandwidth").data_elements(10, 6), 30u);
}

TEST(CommPattern, ExactInFloat32NonZeroAndRankSpecific) {
  for (Dtype t : {Dtype::byte, Dtype::int32, Dtype::float32, Dtype::float64}) {
    for (int r = 0; r < 64; ++r) {
      for (std::size_t i = 0; i < 2000; i += 7) {
        double v = pattern(t, r, i);
        EXPECT_NE(v, 0.0);
        EXPECT_EQ(static_cast<double>(static_cast<float>(v)), v);
        if (t == Dtype::byte) { EXPECT_LE(v, 255.0); }
        if (t == Dtype::int32 || t == Dtype::byte) { EXPECT_EQ(v, std::floor(v)); }
        EXPECT_NE(v, pattern(t, r + 1, i)) << "rank " << r << " element " << i;
      }
    }
  }
}

TEST(CommExpect, ReductionsOverRanks) {
  for (int p : {3, 4}) {
    for (Reduction red : {Reduction::sum, Reduction::max, Reduction::min}) {
      for (Dtype t : {Dtype::int32, Dtype::float32, Dtype::float64}) {
        const std::size_t count = 5;
        for (int r = 0; r < p; ++r) {
          Case c = make_case(r, p, t, count, 1, red);
          expect_all(bench("allreduce"), c, [&](std::size_t i) -> std::optional<double> {
            return reduce_ref(red, t, p, i);
          });
          expect_all(bench("reduce"), c, [&](std::size_t i) -> std::optional<double> {
            if (r != 1) return std::nullopt;
            return reduce_ref(red, t, p, i);
          });
          // Inclusive prefix: rank r holds the reduction over ranks 0..r.
          expect_all(bench("scan"), c, [&](std::size_t i) -> std::optional<double> {
            return reduce_ref(red, t, r + 1, i);
          });
          // Rank r's block of the reduced count * p input; the rest of recv is not checked.
          expect_all(bench("reduce_scatter"), c, [&](std::size_t i) -> std::optional<double> {
            if (i >= count) return std::nullopt;
            return reduce_ref(red, t, p, r * count + i);
          });
        }
      }
    }
  }
  // The tolerance inputs: p terms, sum of magnitudes.
  auto e = bench("allreduce").expect(make_case(0, 4, Dtype::float32, 3), 2);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->terms, 4);
  EXPECT_EQ(e->magnitude, reduce_ref(Reduction::sum, Dtype::float32, 4, 2));  // all patterns positive
}

TEST(CommExpect, DataMovementCollectives) {
  const std::size_t count = 4;
  for (int p : {3, 4}) {
    for (int r = 0; r < p; ++r) {
      for (int root : {0, p - 1}) {
        Case c = make_case(r, p, Dtype::float32, count, root);
        // Block q of allgather's output is rank q's send buffer.
        expect_all(bench("allgather"), c, [&](std::size_t i) -> std::optional<double> {
          std::size_t q = i / count, j = i % count;
          return pattern(c.dtype, static_cast<int>(q), j);
        });
        // Alltoall transposes: rank r's block q is what q sent to r, i.e. q's block r.
        expect_all(bench("alltoall"), c, [&](std::size_t i) -> std::optional<double> {
          std::size_t q = i / count, j = i % count;
          std::vector<double> q_send(count * p);
          for (std::size_t k = 0; k < q_send.size(); ++k) q_send[k] = pattern(c.dtype, static_cast<int>(q), k);
          return q_send[r * count + j];
        });
        expect_all(bench("gather"), c, [&](std::size_t i) -> std::optional<double> {
          if (r != root) return std::nullopt;
          return pattern(c.dtype, static_cast<int>(i / count), i % count);
        });
        // Every rank, the root included, receives its block of the root's buffer.
        expect_all(bench("scatter"), c, [&](std::size_t i) -> std::optional<double> {
          return pattern(c.dtype, root, r * count + i);
        });
        for (const char* name : {"bcast", "ibcast"})
          expect_all(bench(name), c, [&](std::size_t i) -> std::optional<double> {
            if (r == root) return std::nullopt;  // the root sends from its own buffer
            return pattern(c.dtype, root, i);
          });
      }
    }
  }
}

TEST(CommExpect, PointToPointPartners) {
  const std::size_t n = 6;
  for (int p : {2, 3, 4, 5}) {
    for (int r = 0; r < p; ++r) {
      Case c = make_case(r, p, Dtype::byte, n);
      int single = r == 0 ? 1 : r == 1 ? 0 : -1;
      int half = p / 2;
      int multi = r < half ? r + half : r < 2 * half ? r - half : -1;
      auto from = [&](int partner, bool only_follower) {
        return [=](std::size_t i) -> std::optional<double> {
          if (partner < 0 || (only_follower && r < partner)) return std::nullopt;
          return pattern(Dtype::byte, partner, i);
        };
      };
      expect_all(bench("pingpong"), c, from(single, false));
      expect_all(bench("bibandwidth"), c, from(single, false));
      expect_all(bench("bandwidth"), c, from(single, true));
      expect_all(bench("late_receive"), c, from(single, true));
      expect_all(bench("multi_latency"), c, from(multi, false));
      expect_all(bench("multi_bandwidth"), c, from(multi, true));
    }
  }
  EXPECT_EQ(bench("pingpong").time_divisor, 2);
  EXPECT_TRUE(bench("bandwidth").windowed);
  EXPECT_FALSE(bench("pingpong").typed);
  EXPECT_TRUE(bench("late_receive").late_receiver);
  EXPECT_EQ(bench("late_receive").time_divisor, 1);
}

}  // namespace

// MPI_Reduce_local combines what the receive buffer held with the send buffer.
TEST(CommExpectations, ReduceLocalCombinesInitialReceiveWithSend) {
  const Benchmark& b = *find_benchmark("reduce_local");
  ASSERT_TRUE(b.initial_recv);
  for (auto r : {Reduction::sum, Reduction::max, Reduction::min}) {
    Case c;
    c.rank = 2;
    c.size = 4;
    c.dtype = Dtype::float64;
    c.reduction = r;
    c.count = 9;
    for (std::size_t i = 0; i < c.count; ++i) {
      double before = b.initial_recv(c, i), mine = pattern(c.dtype, c.rank, i);
      double want = r == Reduction::sum ? before + mine : r == Reduction::max ? std::max(before, mine) : std::min(before, mine);
      auto e = b.expect(c, i);
      ASSERT_TRUE(e);
      EXPECT_EQ(e->value, want);
      EXPECT_EQ(e->terms, 2);
    }
  }
}

// The size facts a descriptor declares agree with its own byte counts: a per-rank-block
// benchmark counts p blocks of the swept size, a vector benchmark the size alone (a
// pair-aggregate or two-way stream may count it more than once, but never p times);
// only a benchmark that moves nothing is unsized.
TEST(CommDescriptors, SizeFactsAgreeWithTheByteCounts) {
  for (const auto& b : registry()) {
    SCOPED_TRACE(std::string(b.name));
    for (int p : {2, 3, 5, 8}) {
      const std::size_t counted = b.data_elements(7, p);
      if (!b.sized) {
        EXPECT_EQ(counted, 0u);
      } else if (b.size_unit == SizeUnit::per_rank_block) {
        EXPECT_EQ(counted, 7u * p);
      } else {
        EXPECT_GT(counted, 0u);
        if (!b.windowed && b.family == Family::collective) {
          EXPECT_EQ(counted, 7u);
        }
      }
    }
  }
  EXPECT_FALSE(find_benchmark("barrier")->sized);
  EXPECT_EQ(find_benchmark("ialltoall")->size_unit, SizeUnit::per_rank_block);
}

// An MPICH algorithm control's description: items run together, a blocking
// collective's names after the first padded to one column, a non-blocking one's
// prefixed (cli.algorithms checks the names against the library itself); a text not in
// that form gives no names rather than wrong ones.
TEST(LibraryAlgorithms, NamesFromAnMpichDescription) {
  using sextant::comm::parse_mpich_algorithms;
  const std::string text =
      "Variable to select bcast algorithmauto - Internal algorithm selection (can be overridden with "
      "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)binomial               - Force Binomial Treenb                     "
      "- Force nonblocking algorithmsmp                    - Force smp algorithmscatter_ring_allgather - Force "
      "Scatter Ring";
  EXPECT_EQ(parse_mpich_algorithms(text),
            (std::vector<std::string>{"auto", "binomial", "nb", "smp", "scatter_ring_allgather"}));
  const std::string two_columns =
      "Variable to select iallreduce algorithmauto - Internal algorithm selection (can be overridden with "
      "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)sched_auto - Internal algorithm selection for sched-based "
      "algorithmssched_naive      - Force naive algorithmtsp_ring    - Force generic transport ring algorithm";
  EXPECT_EQ(parse_mpich_algorithms(two_columns),
            (std::vector<std::string>{"auto", "sched_auto", "sched_naive", "tsp_ring"}));
  // The library's selections are not algorithms to force (MPICH asserts on sched_auto).
  EXPECT_TRUE(is_library_selection("auto"));
  EXPECT_TRUE(is_library_selection("sched_auto"));
  EXPECT_FALSE(is_library_selection("sched_naive"));
  EXPECT_FALSE(is_library_selection("autotuned"));
  EXPECT_FALSE(is_library_selection("tsp_nauto"));
  const std::string misaligned =
      "Variable to select bcast algorithmauto - Internal algorithm selection (can be overridden with "
      "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)binomial - Force Binomial Treenb                     - Force "
      "nonblocking algorithm";
  EXPECT_TRUE(parse_mpich_algorithms(misaligned).empty());
  EXPECT_TRUE(parse_mpich_algorithms("Variable to select something").empty());
  EXPECT_TRUE(parse_mpich_algorithms("").empty());
}
