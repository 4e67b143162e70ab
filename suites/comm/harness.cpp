#include "suites/comm/harness.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.hpp"
#include "models/collectives.hpp"
#include "suites/comm/clock.hpp"
#include "suites/comm/library_algorithms.hpp"
#include "suites/common/json_results.hpp"
#include "suites/common/results.hpp"
#include "suites/common/runtime.hpp"

namespace sextant::comm {

std::string_view to_string(SyncMode m) { return m == SyncMode::barrier ? "barrier" : "window"; }
std::string_view to_string(Level l) {
  switch (l) {
    case Level::world: return "world";
    case Level::intra: return "intra";
    case Level::inter: return "inter";
  }
  return "?";
}
std::string BenchmarkResult::name() const {
  const std::string plain = std::string(benchmark->name) + (algorithm.empty() ? "" : "@" + algorithm);
  return isolated ? model::isolated_form(plain) : plain;
}

SyncMode parse_sync(std::string_view s) {
  if (s == "barrier") return SyncMode::barrier;
  if (s == "window") return SyncMode::window;
  throw UsageError("--sync '" + std::string(s) + "': use barrier or window");
}
Level parse_level(std::string_view s) {
  for (auto l : {Level::world, Level::intra, Level::inter})
    if (to_string(l) == s) return l;
  throw UsageError("--levels: unknown level '" + std::string(s) + "' (use world, intra, inter)");
}

void make_quick(Options& o) {
  o.sizes = {1, 1 << 20};
  o.factor = 4;
  o.max_iterations = 200;
  o.min_iterations = 10;
  o.warmup = 3;
  o.budget_seconds = 0.03;
}

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// The communicator of a level for this rank (MPI_COMM_NULL when it sits out).
MPI_Comm level_comm(Runtime& rt, Level level) {
  MPI_Comm c = MPI_COMM_NULL;
  switch (level) {
    case Level::world: SEXTANT_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c)); break;
    case Level::intra: SEXTANT_MPI_CHECK(MPI_Comm_dup(rt.node(), &c)); break;
    case Level::inter: {
      int leader = comm_rank(rt.node()) == 0 ? 0 : MPI_UNDEFINED;
      SEXTANT_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, leader, rt.rank(), &c));
      break;
    }
  }
  return c;
}

// Busy floating-point work that makes no MPI progress: the "compute" of the
// overlap measurement.
double dummy_compute(std::uint64_t iterations) {
  double a = 1.0, b = 1.0000001, c = 0.9999999;
  for (std::uint64_t i = 0; i < iterations; ++i) a = a * b + c * 1e-9;
  return a;
}
volatile double compute_sink = 0;

std::uint64_t compute_iterations_for(double seconds) {
  static const double rate = [] {  // iterations per second, calibrated once
    std::uint64_t n = 1 << 20;
    double t0 = MPI_Wtime();
    compute_sink = dummy_compute(n);
    return static_cast<double>(n) / std::max(MPI_Wtime() - t0, 1e-9);
  }();
  return static_cast<std::uint64_t>(seconds * rate);
}

std::string eta_text(double seconds) {
  char buf[32];
  if (seconds < 90)
    std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  else
    std::snprintf(buf, sizeof buf, "%.1f min", seconds / 60);
  return buf;
}

class Sweep {
 public:
  Sweep(Runtime& rt, const Options& o, MPI_Comm comm, WaitMode wait)
      : rt_(rt), o_(o), comm_(comm), wait_(wait), rank_(comm_rank(comm)), size_(comm_size(comm)) {}

  BenchmarkResult run(const Benchmark& b, Level level, Dtype dtype, const std::vector<std::uint64_t>& sizes,
                      const std::function<void(const SizeResult&)>& on_size) {
    BenchmarkResult r{&b, level, dtype, size_, {}, {}};
    for (int pass = 0; pass < passes(); ++pass) {
      const bool last = pass + 1 == passes();
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        SizeResult s = measure(b, dtype, sizes[i], sizes[i] / info(dtype).size, pass == 0 && i == 0, last);
        if (pass == 0) r.sizes.push_back(std::move(s));
        else pool(b, r.sizes[i], s);
        if (last && is_root()) on_size(r.sizes[i]);
      }
    }
    return r;
  }

 private:
  bool is_root() const { return rank_ == 0; }
  int passes() const { return std::max(o_.passes, 1); }
  // Valid repetitions a median needs.
  std::size_t needed() const { return std::min<std::size_t>(3, o_.max_iterations); }
  // What one pass spends on a size: 1/passes of its budget, iteration cap and minimum,
  // and a precision sqrt(passes) coarser (the pooled median's interval is about that much
  // narrower than one pass's), so that the passes together cost what one pass would.
  double pass_budget() const { return o_.budget_seconds / passes(); }
  std::size_t pass_min_iterations() const {
    return std::min(std::max((o_.min_iterations + passes() - 1) / passes(), needed()), o_.min_iterations);
  }
  std::size_t pass_iterations() const {
    return std::max((o_.max_iterations + passes() - 1) / passes(), pass_min_iterations());
  }
  double pass_precision() const { return o_.rel_ci_half_width * std::sqrt(double(passes())); }

  Case make_case(Dtype dtype, std::size_t count) const {
    Case c;
    c.comm = comm_;
    c.rank = rank_;
    c.size = size_;
    c.dtype = dtype;
    c.reduction = o_.reduction;
    c.count = count;
    c.window = o_.window;
    c.wait = wait_;
    c.nonblocking_form = o_.time_nonblocking;
    return c;
  }

  void run_once(const Benchmark& b, Case& c) {
    if (b.nonblocking) {
      MPI_Request r;
      b.start(c, &r);
      wait(r, c.wait);
    } else {
      b.run(c);
    }
  }

  // One iteration, timed: all of it, or the part the benchmark times itself.
  double timed_run(const Benchmark& b, Case& c) {
    c.timed_seconds = -1;
    const double t0 = MPI_Wtime();
    run_once(b, c);
    const double t = MPI_Wtime() - t0;
    return c.timed_seconds >= 0 ? c.timed_seconds : t;
  }

  // ---- validation ------------------------------------------------------------

  long long check(const Benchmark& b, Case c, Buffer& send, Buffer& recv, bool in_place) {
    if (!b.expect) return 0;
    c.send = &send;
    c.recv = &recv;
    c.in_place = in_place;
    auto elem = info(c.dtype).size;
    std::size_t n_send = b.send_elements(c.count, c.size), n_recv = b.recv_elements(c.count, c.size);
    std::vector<unsigned char> host(n_send * elem), rhost(n_recv * elem);
    for (std::size_t i = 0; i < n_send; ++i) store(c.dtype, host.data(), i, pattern(c.dtype, rank_, i));
    for (std::size_t i = 0; i < n_recv; ++i)
      store(c.dtype, rhost.data(), i, b.initial_recv ? b.initial_recv(c, i) : poison(c.dtype));
    if (in_place) {
      if (auto at = b.in_place_offset(c))
        std::copy(host.begin(), host.end(), rhost.begin() + static_cast<std::ptrdiff_t>(*at * elem));
    }
    send.copy_from_host(host);
    recv.copy_from_host(rhost);
    barrier(comm_, wait_);
    run_once(b, c);
    recv.copy_to_host(rhost);
    if (o_.corrupt_rank == rt_.rank()) corrupt(b, c, rhost);

    long long wrong = 0;
    for (std::size_t i = 0; i < n_recv; ++i) {
      auto e = b.expect(c, i);
      if (!e) continue;
      double got = load(c.dtype, rhost.data(), i);
      double tol = e->terms > 1 ? (e->terms - 1) * info(c.dtype).epsilon * e->magnitude : 0.0;
      if (!(std::fabs(got - e->value) <= tol)) {
        if (wrong < 3)
          std::fprintf(stderr, "sextant: WRONG rank %d %s %s %s count %zu%s: element %zu = %.17g, expected %.17g (tolerance %.3g)\n",
                       rt_.rank(), std::string(b.name).c_str(), std::string(info(c.dtype).name).c_str(),
                       std::string(to_string(c.reduction)).c_str(), c.count, in_place ? " in-place" : "", i, got,
                       e->value, tol);
        ++wrong;
      }
    }
    return wrong;
  }

  // Test hook (--test-corrupt-rank): spoil the first element this rank must receive.
  void corrupt(const Benchmark& b, const Case& c, std::vector<unsigned char>& rhost) {
    std::size_t n_recv = b.recv_elements(c.count, c.size);
    for (std::size_t i = 0; i < n_recv; ++i)
      if (auto e = b.expect(c, i)) {
        store(c.dtype, rhost.data(), i, e->value + 7);
        return;
      }
  }

  // ---- timing ----------------------------------------------------------------

  // One batch of iterations; returns this rank's times (NaN for late starts).
  std::vector<double> time_batch(const Benchmark& b, std::vector<Case>& cases, std::size_t first,
                                 std::size_t n, const ClockSync& clock, double window, double gap) {
    std::vector<double> t(n, nan);
    double start = 0;
    if (o_.sync == SyncMode::window) {
      if (is_root()) start = clock.now() + std::max(window, 50e-6);
      bcast(&start, 1, MPI_DOUBLE, 0, comm_, wait_);
    }
    for (std::size_t k = 0; k < n; ++k) {
      Case& c = cases[(first + k) % cases.size()];
      if (o_.sync == SyncMode::barrier) {
        barrier(comm_, wait_);
        for (const double idle_until = MPI_Wtime() + gap; MPI_Wtime() < idle_until;)
          if (wait_ == WaitMode::yield) sched_yield();
        t[k] = timed_run(b, c) / b.time_divisor;
      } else {
        double target = start + static_cast<double>(k) * window - clock.offset;  // local clock
        if (k == 0 && rt_.rank() == o_.stall_rank && first < 2 * first_batch())
          std::this_thread::sleep_for(std::chrono::duration<double>(o_.stall_seconds));
        bool forced_late = rt_.rank() == o_.late_rank;
        if (forced_late && o_.late_seconds > 0) {  // asleep, so that it holds no CPU another rank needs
          std::this_thread::sleep_for(std::chrono::duration<double>(o_.late_seconds));
          forced_late = false;
        }
        bool late = forced_late || MPI_Wtime() > target;
        while (MPI_Wtime() < target)
          if (wait_ == WaitMode::yield) sched_yield();
        c.timed_seconds = -1;
        run_once(b, c);
        if (!late) t[k] = (c.timed_seconds >= 0 ? c.timed_seconds : MPI_Wtime() - target) / b.time_divisor;
      }
    }
    return t;
  }

  SizeResult measure(const Benchmark& b, Dtype dtype, std::uint64_t bytes, std::size_t count, bool first_of_sweep,
                     bool last_pass) {
    SizeResult s;
    s.bytes = bytes;
    s.count = count;
    auto elem = info(dtype).size;
    std::size_t send_bytes = b.send_elements(count, size_) * elem;
    std::size_t recv_bytes = b.recv_elements(count, size_) * elem;
    s.data_bytes = static_cast<double>(b.data_elements(count, size_) * elem) * (b.windowed ? o_.window : 1);

    // Buffer sets: one, or enough to rotate through twice the last-level cache.
    std::size_t sets = 1;
    if (o_.off_cache) {
      double llc = static_cast<double>(std::max<long long>(rt_.machine().last_level_cache_bytes(), 1 << 20));
      sets = static_cast<std::size_t>(std::ceil(2 * llc / std::max<double>(send_bytes + recv_bytes, 1)));
      sets = std::clamp<std::size_t>(sets, 1, 256);
    }
    std::vector<Buffer> sends, recvs;
    for (std::size_t k = 0; k < sets; ++k) {
      sends.emplace_back(o_.memory, send_bytes);
      recvs.emplace_back(o_.memory, recv_bytes);
    }

    // Validation first: out-of-place, then in-place where the benchmark has it.
    Case base = make_case(dtype, count);
    base.in_place = o_.time_in_place && b.in_place_offset;
    for (int k = 0; k < o_.check_iterations; ++k) {
      s.wrong += check(b, base, sends[0], recvs[0], false);
      if (b.in_place_offset) s.wrong_in_place += check(b, base, sends[0], recvs[0], true);
    }
    long long wrong[2] = {s.wrong, s.wrong_in_place};
    allreduce(MPI_IN_PLACE, wrong, 2, MPI_LONG_LONG, MPI_SUM, comm_, wait_);
    s.wrong = wrong[0];
    s.wrong_in_place = wrong[1];

    std::vector<Case> cases(sets, base);
    for (std::size_t k = 0; k < sets; ++k) {
      cases[k].send = &sends[k];
      cases[k].recv = &recvs[k];
    }
    for (std::size_t k = 0; k < o_.warmup; ++k) {
      barrier(comm_, wait_);
      run_once(b, cases[k % sets]);
    }
    if (first_of_sweep) warm_up_sweep(b, cases);
    s.gap = o_.gap;
    if (s.gap < 0) {  // as long as the operation: one more warm-up run, timed, the slowest rank's
      barrier(comm_, wait_);
      s.gap = timed_run(b, cases[0]);
      allreduce(MPI_IN_PLACE, &s.gap, 1, MPI_DOUBLE, MPI_MAX, comm_, wait_);
    }
    if (b.late_receiver) {
      // The receiver posts late by twice what the message takes it when it waits (the
      // slowest of a few runs, on any rank, its start skew included): by then an eager
      // message has arrived.
      double takes = 0;
      for (int k = 0; k < 3; ++k) {
        barrier(comm_, wait_);
        takes = std::max(takes, timed_run(b, cases[0]));
      }
      allreduce(MPI_IN_PLACE, &takes, 1, MPI_DOUBLE, MPI_MAX, comm_, wait_);
      for (auto& c : cases) c.receive_delay = 2 * takes;
    }

    ClockSync clock;
    double window = 0;
    if (o_.sync == SyncMode::window) {
      clock = synchronise_clocks(comm_, wait_);
      s.clock_residual = clock.residual;
      // Pilot: the slowest rank's median of a few barrier-synchronised runs sizes the window.
      std::vector<double> pilot;
      for (int k = 0; k < 5; ++k) {
        barrier(comm_, wait_);
        const double t0 = MPI_Wtime();
        run_once(b, cases[0]);  // the whole iteration: the window must hold all of it
        pilot.push_back(MPI_Wtime() - t0);
      }
      std::sort(pilot.begin(), pilot.end());
      window = pilot[2];
      allreduce(MPI_IN_PLACE, &window, 1, MPI_DOUBLE, MPI_MAX, comm_, wait_);
      window = 2 * window + 4 * clock.residual + 5e-6 + s.gap;
    }

    // Window mode: a size whose starts are (nearly) all late widens its window 4x and
    // tries again, up to the widest window its budget allows (never narrower than the
    // window it started with); one that still cannot be measured is stored as missing,
    // with the reason. (A fixed 3 attempts stopped a sanitized -O0 build at 3.2 ms, short
    // of a rank late by 2 ms plus its iteration.)
    std::vector<double> collective;  // valid collective times, root only
    const double widest = std::max(window, max_window());
    int attempt = 1;
    for (;; ++attempt) {
      window = time_until_stop(b, cases, clock, window, widest, s, collective);
      int retry = is_root() && o_.sync == SyncMode::window && collective.size() < needed() && window < widest;
      bcast(&retry, 1, MPI_INT, 0, comm_, wait_);
      if (!retry) break;
      window = std::min(4 * window, widest);
    }
    s.sync_window = o_.sync == SyncMode::window ? window : nan;
    if (is_root()) {
      char why[160];
      std::snprintf(why, sizeof why, "%zu of %zu starts on time in window mode (%d attempts, window widened to %.3g s)",
                    collective.size(), s.total, attempt, window);
      conclude(b, s, collective, why);
    }
    int missing = is_root() && !s.unmeasured.empty();
    bcast(&missing, 1, MPI_INT, 0, comm_, wait_);
    // The overlap is measured once, in the last pass, against that pass's median.
    if (b.nonblocking && !missing && last_pass) measure_overlap(b, cases, s);
    if (missing || !last_pass) s.overlapped = s.compute = s.overlap_percent = nan;
    return s;
  }

  // The statistics of a size from its valid collective times (root), or why it has none.
  void conclude(const Benchmark& b, SizeResult& s, const std::vector<double>& collective, const std::string& why) {
    s.valid = collective.size();
    s.unmeasured.clear();
    if (collective.size() < needed()) {
      s.unmeasured = why;
      s.time = not_measured();
      s.algbw = s.busbw = nan;
      return;
    }
    s.time = stats::summarize(collective);
    s.algbw = s.busbw = 0;
    if (s.time.median > 0) {
      s.algbw = s.data_bytes / s.time.median;
      s.busbw = s.algbw * b.busbw_factor(size_);
    }
  }

  // Adds a later pass's measurement of a size to what the earlier passes measured: the
  // iterations pooled (their statistics taken again), counts summed, the overlap of the
  // last pass.
  void pool(const Benchmark& b, SizeResult& into, const SizeResult& pass) {
    into.total += pass.total;
    into.late += pass.late;
    into.wrong += pass.wrong;
    into.wrong_in_place += pass.wrong_in_place;
    into.stop = pass.stop;
    into.clock_residual = std::max(into.clock_residual, pass.clock_residual);
    if (!std::isnan(pass.sync_window)) into.sync_window = std::max(into.sync_window, pass.sync_window);
    into.overlapped = pass.overlapped, into.compute = pass.compute, into.overlap_percent = pass.overlap_percent;
    if (!is_root()) return;
    into.rank_times.insert(into.rank_times.end(), pass.rank_times.begin(), pass.rank_times.end());
    std::vector<double> collective;  // rank_times is iteration-major: an iteration's ranks side by side
    for (std::size_t k = 0; k + size_ <= into.rank_times.size(); k += size_) {
      const auto first = into.rank_times.begin() + static_cast<std::ptrdiff_t>(k);
      if (std::none_of(first, first + size_, [](double v) { return std::isnan(v); }))
        collective.push_back(*std::max_element(first, first + size_));
    }
    char why[160];
    std::snprintf(why, sizeof why, "%zu of %zu starts on time in window mode over %d passes", collective.size(),
                  into.total, passes());
    conclude(b, into, collective, why);
  }

  // Options::sweep_warmup_seconds of the operation, barriers included, as rank 0's clock
  // says: batches of runs, doubling, each followed by its decision (one for all ranks,
  // so that each runs the same number). Oversubscribed, a run costs far more than its
  // own time, so a count taken from one run's time would not bound the warm-up.
  void warm_up_sweep(const Benchmark& b, std::vector<Case>& cases) {
    const double seconds = o_.sweep_warmup_seconds >= 0 ? o_.sweep_warmup_seconds : std::min(0.2, o_.budget_seconds);
    if (!(seconds > 0)) return;
    const double t_begin = MPI_Wtime();
    std::size_t done = 0;
    for (std::size_t batch = 1;; batch = std::min<std::size_t>(2 * batch, 256)) {
      for (std::size_t k = 0; k < batch; ++k, ++done) {
        barrier(comm_, wait_);
        run_once(b, cases[done % cases.size()]);
      }
      int more = is_root() && MPI_Wtime() - t_begin < seconds;
      bcast(&more, 1, MPI_INT, 0, comm_, wait_);
      if (!more) return;
    }
  }

  // The widest window: one whose minimum repetitions fit in the longest budget a size
  // may take (10 x --budget, see time_until_stop), twice over.
  double max_window() const {
    return 10 * pass_budget() / (2.0 * static_cast<double>(std::max<std::size_t>(pass_min_iterations(), 1)));
  }

  static stats::Summary not_measured() {
    stats::Summary t;
    t.min = t.max = t.mean = t.median = t.ci_lo = t.ci_hi = t.p5 = t.p95 = t.p99 = t.cv = nan;
    return t;
  }

  // A size short of valid starts gives up only after this many batches at its widest
  // window were mostly late. (One stall, such as a TCP retransmission's wait of 200 ms
  // or more, spoils the batch it falls in whatever the window: a size that gave up on
  // its first such batch was lost to it.)
  static constexpr int kLateBatchesAtWidest = 3;
  std::size_t first_batch() const { return std::max<std::size_t>(pass_min_iterations(), 1); }

  // Batches of iterations until the stop rule (precision, budget or iteration cap) is met;
  // appends to s's counts and samples and, on the root, the valid collective times.
  // Returns the window (widened while too many starts are late, up to `widest`).
  double time_until_stop(const Benchmark& b, std::vector<Case>& cases, const ClockSync& clock, double window,
                         double widest, SizeResult& s, std::vector<double>& collective) {
    stats::StopRule rule{pass_precision(), pass_budget(), pass_min_iterations(), pass_iterations()};
    const double t_begin = MPI_Wtime();
    std::size_t done = 0, batch = first_batch();
    int late_at_widest = 0;
    for (;;) {
      batch = std::min(batch, pass_iterations() - done);
      auto local = time_batch(b, cases, s.total, batch, clock, window, o_.sync == SyncMode::barrier ? s.gap : 0);
      std::vector<double> all(is_root() ? batch * static_cast<std::size_t>(size_) : 1);
      gather(local.data(), static_cast<int>(batch), MPI_DOUBLE, all.data(), 0, comm_, wait_);
      int verdict = 0;  // 0 go on, else 1 + StopReason
      bool mostly_late = false;
      if (is_root()) {
        std::size_t late_in_batch = 0;
        for (std::size_t k = 0; k < batch; ++k) {
          double worst = 0;
          bool valid = true;
          for (int r = 0; r < size_; ++r) {
            double v = all[static_cast<std::size_t>(r) * batch + k];
            s.rank_times.push_back(v);
            if (std::isnan(v)) valid = false;
            else worst = std::max(worst, v);
          }
          if (valid) collective.push_back(worst);
          else ++late_in_batch;
        }
        s.late += late_in_batch;
        // A wide window must still leave room for the minimum repetitions: the budget
        // is at least twice what they take at the current window, up to 10 times the
        // budget asked for (a size whose starts stay late is not measured for ever).
        rule.budget_seconds = std::clamp(2.0 * static_cast<double>(first_batch()) * window, pass_budget(),
                                         10 * pass_budget());
        mostly_late = late_in_batch * 2 > batch;
        if (mostly_late && window >= widest) ++late_at_widest;
        if (mostly_late) window = std::min(2 * window, widest);  // too many late starts: widen the window
        const bool short_of_samples = collective.size() < needed();
        if (auto stop = stats::should_stop(rule, collective, MPI_Wtime() - t_begin)) verdict = 1 + static_cast<int>(*stop);
        // Out of budget but short of samples: go on while the batches at the widest
        // window have not all been late (the iteration cap still bounds it).
        if (verdict == 1 + static_cast<int>(stats::StopReason::budget) && short_of_samples &&
            late_at_widest < kLateBatchesAtWidest)
          verdict = 0;
        if (!verdict && done + batch >= pass_iterations()) verdict = 1 + static_cast<int>(stats::StopReason::iteration_cap);
        if (short_of_samples && late_at_widest >= kLateBatchesAtWidest) verdict = 1 + static_cast<int>(stats::StopReason::budget);
      }
      double shared[3] = {static_cast<double>(verdict), window, static_cast<double>(mostly_late)};
      bcast(shared, 3, MPI_DOUBLE, 0, comm_, wait_);
      verdict = static_cast<int>(shared[0]);
      window = shared[1];
      done += batch;
      s.total += batch;
      if (verdict) {
        s.stop = static_cast<stats::StopReason>(verdict - 1);
        return window;
      }
      // Grow batches only while the window holds: late batches are spent finding it.
      batch = shared[2] != 0 ? first_batch() : std::min<std::size_t>(batch * 2, 200);
    }
  }

  // OMB-NBC: compute for as long as the pure operation takes, overlapped with it.
  void measure_overlap(const Benchmark& b, std::vector<Case>& cases, SizeResult& s) {
    double pure = s.time.median;
    bcast(&pure, 1, MPI_DOUBLE, 0, comm_, wait_);
    auto iters = compute_iterations_for(pure);
    std::size_t reps = std::clamp<std::size_t>(s.total / 2, 5, 50);
    std::vector<double> ovl, cpu;
    for (std::size_t k = 0; k < reps; ++k) {
      Case& c = cases[k % cases.size()];
      barrier(comm_, wait_);
      double t0 = MPI_Wtime();
      MPI_Request r;
      b.start(c, &r);
      compute_sink = dummy_compute(iters);
      wait(r, c.wait);
      double t1 = MPI_Wtime();
      compute_sink = dummy_compute(iters);
      double t2 = MPI_Wtime();
      double both[2] = {t1 - t0, t2 - t1};
      allreduce(MPI_IN_PLACE, both, 2, MPI_DOUBLE, MPI_MAX, comm_, wait_);
      ovl.push_back(both[0]);
      cpu.push_back(both[1]);
    }
    s.overlapped = stats::summarize(ovl).median;
    s.compute = stats::summarize(cpu).median;
    s.overlap_percent = pure > 0 ? 100.0 * std::clamp(1.0 - (s.overlapped - s.compute) / pure, 0.0, 1.0) : 0.0;
  }

  Runtime& rt_;
  const Options& o_;
  MPI_Comm comm_;
  WaitMode wait_;
  int rank_, size_;
};

// ---- output ----------------------------------------------------------------

// Tables as OSU and nccl-tests users parse them: '#' before every line that is not a
// size, whitespace-separated columns, the size first (at the line's start) and the
// median second, so that a regex like ^SIZE\s+(\S+) picks the median.
void print_header(const BenchmarkResult& r, const Options& o) {
  const auto& b = *r.benchmark;
  std::printf("# %s  level=%s  ranks=%d  dtype=%s%s  sync=%s%s\n", r.name().c_str(),
              std::string(to_string(r.level)).c_str(), r.ranks, std::string(info(r.dtype).name).c_str(),
              b.reduces ? (std::string("  op=") + std::string(to_string(o.reduction))).c_str() : "",
              std::string(to_string(o.sync)).c_str(), b.windowed ? ("  window=" + std::to_string(o.window)).c_str() : "");
  std::printf("%-12s %11s %11s %11s %11s %11s %11s %11s %8s %6s %-13s %10s%s\n",
              o.total_bytes_column ? "# total_bytes" : "# bytes", "median(us)", "ci_lo(us)",
              "ci_hi(us)", "min(us)", "p99(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong", "reps", "stop", "count",
              b.nonblocking ? "  overlap(%)" : "");
}

// The size column: the size swept (OSU's), or with total_bytes_column the bytes the
// operation moves in all, algbw's numerator (nccl-tests' "size").
void print_row(const SizeResult& s, const Benchmark& b, const Options& o) {
  const auto size = o.total_bytes_column ? static_cast<unsigned long long>(s.data_bytes)
                                         : static_cast<unsigned long long>(s.bytes);
  if (!s.unmeasured.empty()) {
    std::printf("%-12llu %11s  not measured: %s\n", size, "-", s.unmeasured.c_str());
    std::fflush(stdout);
    return;
  }
  std::printf("%-12llu %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f %8lld %6zu %-13s %10llu",
              size, s.time.median * 1e6, s.time.ci_lo * 1e6, s.time.ci_hi * 1e6,
              s.time.min * 1e6, s.time.p99 * 1e6, s.algbw / 1e9, s.busbw / 1e9, s.wrong + s.wrong_in_place, s.valid,
              std::string(stats::to_string(s.stop)).c_str(), (unsigned long long)s.count);
  if (b.nonblocking) std::printf("  %10.1f", s.overlap_percent);
  std::printf("\n");
  std::fflush(stdout);
}

nlohmann::json to_json(const BenchmarkResult& r, const Options& o) {
  nlohmann::json j;
  j["benchmark"] = r.name();
  j["algorithm"] = r.algorithm.empty() ? "auto" : r.algorithm;
  j["level"] = to_string(r.level);
  j["dtype"] = info(r.dtype).name;
  j["op"] = to_string(o.reduction);
  j["ranks"] = r.ranks;
  j["sync"] = to_string(o.sync);
  for (const auto& s : r.sizes) {
    j["sizes"].push_back({{"bytes", s.bytes},         {"count", s.count},       {"median_s", s.time.median},
                          {"ci_lo_s", s.time.ci_lo},  {"ci_hi_s", s.time.ci_hi}, {"min_s", s.time.min},
                          {"mean_s", s.time.mean},    {"max_s", s.time.max},     {"p5_s", s.time.p5},
                          {"p95_s", s.time.p95},      {"p99_s", s.time.p99},     {"cv", s.time.cv},
                          {"algbw_Bps", s.algbw},     {"busbw_Bps", s.busbw},    {"wrong", s.wrong},
                          {"wrong_in_place", s.wrong_in_place}, {"valid", s.valid}, {"total", s.total},
                          {"stop", stats::to_string(s.stop)}, {"sync_window_s", s.sync_window},
                          {"gap_s", s.gap}, {"unmeasured", s.unmeasured}});
  }
  return j;
}

std::vector<std::uint64_t> sizes_for(const Benchmark& b, Dtype dtype, const Options& o) {
  if (!b.sized) return {0};
  std::vector<std::uint64_t> out;
  auto elem = info(dtype).size;
  auto sizes = o.extra_sizes_only ? std::vector<std::uint64_t>{} : geometric_sizes(o.sizes, o.factor);
  if (const auto extra = o.extra_sizes.find(b.name); extra != o.extra_sizes.end()) {
    sizes.insert(sizes.end(), extra->second.begin(), extra->second.end());
    std::sort(sizes.begin(), sizes.end());
  }
  for (auto bytes : sizes) {
    if (bytes > 0 && bytes < elem) continue;  // no whole element
    auto rounded = bytes / elem * elem;
    if (out.empty() || out.back() != rounded) out.push_back(rounded);
  }
  return out;
}

// The memory /proc/meminfo reports available (MemAvailable: what can be allocated
// without swapping), in bytes, or -1 where it cannot be read.
double available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return -1;
}

// Refuses, before anything is measured, a size sweep whose buffers cannot fit: the
// operating system overcommits, so an allocation that cannot be backed succeeds and
// the OOM killer ends the run later, losing its messages. Per rank, the largest size
// of each benchmark needs its send and receive buffers (sets of them with --off-cache)
// plus the host copies validation makes; every rank of a node needs it at once. The
// decision is collective, so that every rank stops with the same message.
void check_buffer_memory(const Runtime& rt, const Options& o, const std::vector<const Benchmark*>& selected) {
  double need = 0;
  const int p = rt.size();
  const double llc = static_cast<double>(std::max<long long>(rt.machine().last_level_cache_bytes(), 1 << 20));
  std::string largest;
  for (const auto* b : selected)
    for (auto requested : o.dtypes) {
      const Dtype dtype = b->typed ? requested : Dtype::byte;
      const auto sizes = sizes_for(*b, dtype, o);
      const auto elem = info(dtype).size;
      const std::size_t count = sizes.empty() ? 0 : sizes.back() / elem;
      const double pair = static_cast<double>((b->send_elements(count, p) + b->recv_elements(count, p)) * elem);
      const double sets = o.off_cache ? std::clamp(std::ceil(2 * llc / std::max(pair, 1.0)), 1.0, 256.0) : 1.0;
      const double bytes = pair * (sets + 1);
      if (bytes > need) {
        need = bytes;
        largest = std::string(b->name) + " " + std::string(info(dtype).name) + " at " +
                  format_bytes(static_cast<double>(sizes.back()));
      }
      if (!b->typed) break;
    }
  const double available = available_memory_bytes();
  const double node_need = need * rt.ranks_on_node();
  // 80%: the MPI library and the rest of the process need their share too.
  int fits = available < 0 || node_need <= 0.8 * available ? 1 : 0, all_fit = 1;
  SEXTANT_MPI_CHECK(MPI_Allreduce(&fits, &all_fit, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (!all_fit)
    throw UsageError("-m: the largest size needs " + format_bytes(need) + " of buffers per rank (" + largest +
                     "), " + format_bytes(node_need) + " for the " + std::to_string(rt.ranks_on_node()) +
                     " ranks of a node, more than 80% of the memory available" +
                     (fits ? " on another node" : " here (" + format_bytes(available) + ")") +
                     ": lower the largest size (-m MIN:MAX)");
}

}  // namespace

void write_results(ResultsFile& file, const BenchmarkResult& r, const Options& o, bool oversubscribed) {
  const auto& b = *r.benchmark;
  h5::Group g = file.group("comm/" + std::string(to_string(r.level)) + "/" + r.name() + "/" +
                           std::string(info(r.dtype).name) + "/" + rank_group(r.ranks));
  g.set_attr("benchmark", r.name());
  g.set_attr("algorithm", r.algorithm.empty() ? "auto" : r.algorithm);
  g.set_attr("family", b.family == Family::pt2pt ? "pt2pt" : "collective");
  g.set_attr("nonblocking", std::int64_t{b.nonblocking});
  g.set_attr("level", std::string(to_string(r.level)));
  g.set_attr("dtype", std::string(info(r.dtype).name));
  g.set_attr("op", b.reduces ? std::string(to_string(o.reduction)) : std::string("none"));
  g.set_attr("sync", std::string(to_string(o.sync)));
  g.set_attr("passes", std::int64_t{std::max(o.passes, 1)});
  g.set_attr("ranks", std::int64_t{r.ranks});
  g.set_attr("busbw_factor", b.busbw_factor(r.ranks));
  g.set_attr("time_divisor", b.time_divisor);
  g.set_attr("size_unit", to_string(b.size_unit));
  g.set_attr("window", std::int64_t{b.windowed ? o.window : 1});
  g.set_attr("in_place_timed", std::int64_t{o.time_in_place && b.in_place_offset != nullptr});
  g.set_attr("nonblocking_form", std::int64_t{o.time_nonblocking});  // the run's option, --nonblocking-form
  g.set_attr("off_cache", std::int64_t{o.off_cache});
  g.set_attr("memory", o.memory == MemoryKind::host ? "host" : "device");
  g.set_attr("oversubscribed", std::int64_t{oversubscribed});
  g.set_attr("timings_meaningful", std::int64_t{!oversubscribed});

  auto column = [&](auto get) {
    std::vector<double> v;
    for (const auto& s : r.sizes) v.push_back(static_cast<double>(get(s)));
    return v;
  };
  auto icolumn = [&](auto get) {
    std::vector<std::int64_t> v;
    for (const auto& s : r.sizes) v.push_back(static_cast<std::int64_t>(get(s)));
    return v;
  };
  g.write("bytes", icolumn([](const SizeResult& s) { return s.bytes; }));
  g.write("count", icolumn([](const SizeResult& s) { return s.count; }));
  g.write("data_bytes", column([](const SizeResult& s) { return s.data_bytes; }));
  g.write("median", column([](const SizeResult& s) { return s.time.median; }));
  g.write("ci_lo", column([](const SizeResult& s) { return s.time.ci_lo; }));
  g.write("ci_hi", column([](const SizeResult& s) { return s.time.ci_hi; }));
  g.write("min", column([](const SizeResult& s) { return s.time.min; }));
  g.write("mean", column([](const SizeResult& s) { return s.time.mean; }));
  g.write("max", column([](const SizeResult& s) { return s.time.max; }));
  g.write("p5", column([](const SizeResult& s) { return s.time.p5; }));
  g.write("p95", column([](const SizeResult& s) { return s.time.p95; }));
  g.write("p99", column([](const SizeResult& s) { return s.time.p99; }));
  g.write("cv", column([](const SizeResult& s) { return s.time.cv; }));
  g.write("algbw", column([](const SizeResult& s) { return s.algbw; }));
  g.write("busbw", column([](const SizeResult& s) { return s.busbw; }));
  g.write("valid", icolumn([](const SizeResult& s) { return s.valid; }));
  g.write("total", icolumn([](const SizeResult& s) { return s.total; }));
  g.write("late", icolumn([](const SizeResult& s) { return s.late; }));
  g.write("wrong", icolumn([](const SizeResult& s) { return s.wrong; }));
  g.write("wrong_in_place", icolumn([](const SizeResult& s) { return s.wrong_in_place; }));
  g.write("clock_residual", column([](const SizeResult& s) { return s.clock_residual; }));
  g.write("sync_window", column([](const SizeResult& s) { return s.sync_window; }));
  g.write("gap", column([](const SizeResult& s) { return s.gap; }));
  std::vector<std::string> unmeasured;
  for (const auto& s : r.sizes) unmeasured.push_back(s.unmeasured);
  g.write("unmeasured", unmeasured);
  std::vector<std::string> stops;
  for (const auto& s : r.sizes) stops.emplace_back(stats::to_string(s.stop));
  g.write("stop_reason", stops);
  if (b.nonblocking) {
    g.write("overlapped", column([](const SizeResult& s) { return s.overlapped; }));
    g.write("compute", column([](const SizeResult& s) { return s.compute; }));
    g.write("overlap_percent", column([](const SizeResult& s) { return s.overlap_percent; }));
  }
  h5::Group samples = g.create_group("samples");
  samples.set_attr("layout", "per size i: dataset NNN of shape [iterations, ranks], seconds; NaN = late start");
  for (std::size_t i = 0; i < r.sizes.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "%03zu", i);
    const auto& s = r.sizes[i];
    samples.write(name, s.rank_times, {s.rank_times.size() / static_cast<hsize_t>(r.ranks), static_cast<hsize_t>(r.ranks)});
  }
  file.flush();
}

// The library's algorithms forced for one benchmark: its control, (name, value) pairs.
struct Forcing {
  std::optional<LibraryAlgorithms> control;
  std::vector<std::pair<std::string, int>> algorithms;
};

// Options::algorithms resolved against what the library has: for each selected
// benchmark, the algorithms to force. With yielding waits (oversubscribed runs) a
// collective runs in its non-blocking form (MPI_Iallreduce for allreduce), whose
// algorithms the library controls apart: those are forced then. A name that no
// selected benchmark's control lists is a usage error naming what each has.
std::map<const Benchmark*, Forcing> algorithms_to_force(const Runtime& rt, const Options& o,
                                                        const std::vector<const Benchmark*>& selected, WaitMode wait) {
  std::map<const Benchmark*, Forcing> out;
  for (const auto* b : selected) out[b];
  if (o.algorithms.empty()) return out;
  if (wait == WaitMode::yield && rt.is_root())
    std::fprintf(stderr, "sextant: --algorithms: waits yield the core here (oversubscribed or --wait yield): "
                         "collectives run in their non-blocking form, whose algorithms are forced\n");
  const bool all = o.algorithms.size() == 1 && o.algorithms[0] == "all";
  std::set<std::string> found;
  std::string listed;
  for (const auto* b : selected) {
    if (b->mpi_function.empty()) continue;
    Forcing& f = out[b];
    const bool runs_nonblocking = b->nonblocking || wait == WaitMode::yield || o.time_nonblocking;
    f.control = library_algorithms(runs_nonblocking ? nonblocking_function(b->mpi_function) : b->mpi_function);
    if (!f.control) continue;
    listed += std::string(listed.empty() ? "" : "; ") + std::string(b->name) + ":";
    for (std::size_t v = 1; v < f.control->algorithms.size(); ++v) {
      const std::string& name = f.control->algorithms[v];
      // sched_auto is the library's selection among its schedule-based algorithms, not
      // an algorithm: the plain run measures the library's choice, and MPICH asserts when
      // it is set as a forced value.
      if (is_library_selection(name)) continue;
      listed += " " + name;
      if (all || std::find(o.algorithms.begin(), o.algorithms.end(), name) != o.algorithms.end()) {
        f.algorithms.push_back({name, static_cast<int>(v)});
        found.insert(name);
      }
    }
  }
  if (!all)
    for (const auto& name : o.algorithms)
      if (!found.count(name))
        throw UsageError("--algorithms: '" + name + "' is not an algorithm of the selected collectives in this MPI library (" +
                         (listed.empty() ? std::string("it exposes none through MPI_T") : listed) + ")");
  if (listed.empty() && rt.is_root())
    std::fprintf(stderr, "sextant: --algorithms: this MPI library exposes no collective algorithm through MPI_T: its own "
                         "choice only\n");
  return out;
}

Outcome run_comm_suite(Runtime& rt, const Options& o, ResultsFile* results, JsonResults* json) {
  WaitMode wait = o.wait.value_or(rt.oversubscribed() ? WaitMode::yield : WaitMode::blocking);
  if (rt.is_root() && rt.oversubscribed())
    std::fprintf(stderr,
                 "sextant: WARNING: %d ranks on a node with %d usable CPUs: oversubscribed, timings are not "
                 "meaningful (waits yield the core; results are marked)\n",
                 rt.ranks_on_node(), rt.node_cpus());

  std::vector<const Benchmark*> selected;
  if (o.benchmarks.empty())
    for (const auto& b : registry()) selected.push_back(&b);
  for (const auto& name : o.benchmarks) {
    const Benchmark* b = find_benchmark(name);
    if (!b) {
      std::string known;
      for (const auto& k : registry()) known += (known.empty() ? "" : ", ") + std::string(k.name);
      throw UsageError("--collectives: unknown benchmark '" + name + "' (known: " + known + ")");
    }
    selected.push_back(b);
  }

  // The library's algorithms each benchmark is measured with besides its own choice.
  const auto forced = algorithms_to_force(rt, o, selected, wait);

  // Total work for the ETA.
  std::size_t total_sizes = 0, done_sizes = 0;
  for (const auto* b : selected)
    for (auto dtype : o.dtypes) {
      total_sizes += sizes_for(*b, b->typed ? dtype : Dtype::byte, o).size() * o.levels.size() *
                     std::max<std::size_t>(o.rank_counts.size(), 1) * (1 + forced.at(b).algorithms.size());
      if (!b->typed) break;
    }
  check_buffer_memory(rt, o, selected);
  double t_start = MPI_Wtime();
  long long counts_here[2] = {0, 0};  // wrong values, unmeasured sizes
  std::vector<Outcome::Timed> timed;

  for (auto level : o.levels) {
    MPI_Comm comm = level_comm(rt, level);
    int participants = comm == MPI_COMM_NULL ? 0 : comm_size(comm), smallest = 0;
    int mine = comm == MPI_COMM_NULL ? std::numeric_limits<int>::max() : participants;
    SEXTANT_MPI_CHECK(MPI_Allreduce(&mine, &smallest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (smallest < 2) {
      if (rt.is_root())
        std::fprintf(stderr, "sextant: level %s has fewer than 2 ranks here: skipped\n",
                     std::string(to_string(level)).c_str());
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
      continue;
    }
    // The rank sweep: each count on the level's first p ranks (all of them by default).
    std::vector<int> rank_counts;
    for (int p : o.rank_counts.empty() ? std::vector<int>{smallest} : o.rank_counts) {
      if (p <= smallest) rank_counts.push_back(p);
      else if (rt.is_root())
        std::fprintf(stderr, "sextant: level %s has %d ranks: the sweep's %d skipped there\n",
                     std::string(to_string(level)).c_str(), smallest, p);
    }
    for (int p : rank_counts) {
      MPI_Comm sub = MPI_COMM_NULL;
      if (comm != MPI_COMM_NULL)
        SEXTANT_MPI_CHECK(MPI_Comm_split(comm, comm_rank(comm) < p ? 0 : MPI_UNDEFINED, comm_rank(comm), &sub));
      for (const auto* b : selected) {
        const Forcing& forcing = forced.at(b);
        // One sweep of sizes: the library's choice (a = 0), or its a-th forced algorithm.
        auto measure = [&](Dtype dtype, std::size_t a) {
          auto sizes = sizes_for(*b, dtype, o);
          if (sizes.empty()) return;
          if (sub != MPI_COMM_NULL) {
            std::optional<ForcedAlgorithm> force;  // put back when this sweep ends
            if (a > 0) force.emplace(*forcing.control, forcing.algorithms[a - 1].second);
            Sweep sweep(rt, o, sub, wait);
            bool header = false;
            BenchmarkResult r{b, level, dtype, comm_size(sub), {}, {}};
            if (a > 0) r.algorithm = forcing.algorithms[a - 1].first;
            r.isolated = o.gap != 0;
            auto on_size = [&](const SizeResult& s) {
              if (!rt.is_root()) return;  // other nodes' intra-level roots stay quiet
              if (!header) {
                print_header(r, o);
                header = true;
              }
              print_row(s, *b, o);
              ++done_sizes;
              double elapsed = MPI_Wtime() - t_start;
              double eta = elapsed / static_cast<double>(done_sizes) * static_cast<double>(total_sizes - std::min(done_sizes, total_sizes));
              std::fprintf(stderr, "[comm %s] %s %s %s (%zu/%zu) ETA %s\n", std::string(to_string(level)).c_str(),
                           r.name().c_str(), std::string(info(dtype).name).c_str(),
                           format_bytes(static_cast<double>(s.bytes)).c_str(), done_sizes, total_sizes,
                           eta_text(eta).c_str());
            };
            r.sizes = sweep.run(*b, level, dtype, sizes, on_size).sizes;
            if (comm_rank(sub) == 0)
              for (const auto& s : r.sizes) {
                counts_here[0] += s.wrong + s.wrong_in_place;
                counts_here[1] += !s.unmeasured.empty();
              }
            if (rt.is_root()) {
              std::printf("\n");
              for (const auto& s : r.sizes)
                if (s.unmeasured.empty())
                  timed.push_back({r.name(), std::string(to_string(level)), std::string(info(dtype).name), r.ranks,
                                   double(s.bytes), s.time.median});
              if (results) write_results(*results, r, o, rt.oversubscribed());
              if (json) json->append("comm", to_json(r, o));
            }
          } else {
            done_sizes += sizes.size();
          }
          // Ranks outside this rank count wait asleep where waits yield: polling, they would
          // share the CPUs with the ranks measuring (8 ranks on 2 CPUs stretched the p = 5
          // sweep's messages by what 4 ranks do not).
          barrier(MPI_COMM_WORLD, sub == MPI_COMM_NULL && wait == WaitMode::yield ? WaitMode::doze : wait);
        };
        for (auto requested : o.dtypes) {
          const Dtype dtype = b->typed ? requested : Dtype::byte;
          for (std::size_t a = 0; a <= forcing.algorithms.size(); ++a) measure(dtype, a);
          if (!b->typed) break;
        }
      }
      if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
    }
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
  long long counts[2] = {0, 0};
  allreduce(counts_here, counts, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, wait);
  return {counts[0], counts[1], std::move(timed)};
}

}  // namespace sextant::comm
