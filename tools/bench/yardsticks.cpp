// Compute yardsticks (a benchmark, not a test): sextant's Kokkos kernels measured side
// by side with established implementations in one run, same thread count, same data:
//   triad     Kokkos stream_triad vs a plain OpenMP STREAM triad on the same arrays (goal >= 0.95)
//   gemm      Kokkos gemm vs OpenBLAS dgemm / sgemm on the same matrices     (goal >= 0.6), and
//             the vendor path (Kokkos Kernels' gemm on the BLAS TPL) vs OpenBLAS called directly
//             (goal >= 0.9), where sextant was built with Kokkos Kernels
//   peak      Kokkos peak_fma (best of its accumulator sweep) vs the best OpenBLAS GEMM rate of
//             its precision (goal >= 1.05: a ceiling must beat every real kernel), and
//             float32 vs float64 (goal >= 1.9: twice the lanes per vector)
//   roof      each elementwise training kernel (bias+GELU, layer norm, softmax, AdamW,
//             embedding; forward and backward, float32 and float64, the suite's quick
//             shapes) vs its own roofline bound (goal >= 0.7): its counted bytes at the
//             bandwidth stream_triad reaches on a working set of the same size (AdamW,
//             which updates in place: an update in place of its own stream mix), timed alternately
//             with it, or its counted FLOPs at peak_fma's rate with its
//             exponentials at peak_exp's (kernels/peak_exp.hpp), whichever takes longer.
// Sides alternate in blocks with a pause between them (OpenBLAS and OpenMP workers spin
// for a while after a call, which would slow the other side on a small machine), and
// OpenBLAS's threads are not confined to the CPU OpenMP pins the initial thread to.
// Ratios are of medians. Table to stdout, progress to stderr. OpenBLAS is linked into
// this program only, never into the suite.
//
//   sextant_yardsticks [--quick] [--gemm] [--stream-bytes N] [--roofs KERNEL,...] [Kokkos options]
// (--gemm: the GEMM rows alone, e.g. to compare SEXTANT_GEMM_BLOCKS settings)
// (--roofs: only those kernels' roof rows, for work on one kernel)
#include <cblas.h>
#include <omp.h>
#include <sched.h>
#include <sys/sysinfo.h>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/machine.hpp"
#include "core/stats.hpp"
#include "kernels/fp_env.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_blocks.hpp"
#include "kernels/peak.hpp"
#include "kernels/peak_exp.hpp"
#include "kernels/registry.hpp"
#include "kernels/stream.hpp"
#ifdef SEXTANT_HAVE_KOKKOS_KERNELS
#include "kernels/vendor_blas.hpp"
#endif

namespace {

namespace k = sextant::kernels;
using Exec = Kokkos::DefaultExecutionSpace;
static_assert(k::runs_on_host<Exec>, "the yardsticks compare with host libraries (OpenMP, OpenBLAS)");

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

using sextant::stats::median;

void pause_between_sides() { std::this_thread::sleep_for(std::chrono::milliseconds(150)); }

// Times `ours` and `theirs` alternately: `blocks` blocks of `per_block` runs each.
struct Pair {
  std::vector<double> ours, theirs;
};
Pair alternate(const std::function<void()>& ours, const std::function<void()>& theirs, int blocks, int per_block) {
  Pair p;
  ours();  // warm-up both
  theirs();
  for (int b = 0; b < blocks; ++b) {
    pause_between_sides();
    for (int r = 0; r < per_block; ++r) {
      const double t0 = now();
      ours();
      p.ours.push_back(now() - t0);
    }
    pause_between_sides();
    for (int r = 0; r < per_block; ++r) {
      const double t0 = now();
      theirs();
      p.theirs.push_back(now() - t0);
    }
  }
  return p;
}

struct Row {
  std::string what, ours_label, theirs_label;
  double ours = 0, theirs = 0;  // rates
  const char* unit = "";
  double goal = 0;
};

std::vector<Row> rows;

void report(const Row& r) {
  const double ratio = r.ours / r.theirs;
  char ours[48], theirs[48];
  std::snprintf(ours, sizeof ours, "%.1f %s", r.ours, r.unit);
  std::snprintf(theirs, sizeof theirs, "%.1f %s", r.theirs, r.unit);
  std::printf("%-36s %15s %-12s %15s %-22s %6.2f  >= %.2f  %s\n", r.what.c_str(), ours, r.ours_label.c_str(), theirs,
              r.theirs_label.c_str(), ratio, r.goal, ratio >= r.goal ? "met" : "MISSED");
  std::fflush(stdout);
}

// --- STREAM triad -----------------------------------------------------------------

void openmp_triad(double* __restrict a, const double* __restrict b, const double* __restrict c, double q,
                  std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) a[i] = b[i] + q * c[i];
}

void triad(std::int64_t n, bool quick) {
  Exec exec;
  k::View1<double, Exec> a(Kokkos::view_alloc(Kokkos::WithoutInitializing, "a"), n);
  k::View1<double, Exec> b(Kokkos::view_alloc(Kokkos::WithoutInitializing, "b"), n);
  k::View1<double, Exec> c(Kokkos::view_alloc(Kokkos::WithoutInitializing, "c"), n);
  k::fill_uniform(exec, a, 1, 0.5, 1.5);
  k::fill_uniform(exec, b, 2, 0.5, 1.5);
  k::fill_uniform(exec, c, 3, 0.5, 1.5);
  exec.fence();
  const double q = 0.4;
  auto p = alternate([&] { k::stream_triad(exec, a, b, c, q); exec.fence(); },
                     [&] { openmp_triad(a.data(), b.data(), c.data(), q, n); }, quick ? 3 : 6, 5);
  // Both sides computed the same values into the same array: check one element.
  const double bytes = k::stream_bytes(k::StreamOp::triad, double(n), 8);
  char what[96];
  std::snprintf(what, sizeof what, "triad float64 (%.0f MiB, 3 arrays)", bytes / (1 << 20));
  rows.push_back({what, "stream_triad", "OpenMP triad", bytes / median(p.ours) * 1e-9, bytes / median(p.theirs) * 1e-9,
                  "GB/s", 0.95});
  report(rows.back());
}

// --- GEMM -------------------------------------------------------------------------

double best_dgemm = 0, best_sgemm = 0;

template <class Scalar>
void gemm(std::int64_t M, std::int64_t N, std::int64_t K, bool quick) {
  Exec exec;
  k::View2<Scalar, Exec> A("A", M, K), B("B", K, N), C("C", M, N), Cref("Cref", M, N);
  k::fill_uniform(exec, A, 11, 0.1, 1.0);
  k::fill_uniform(exec, B, 12, 0.1, 1.0);
  exec.fence();
  auto blas = [&] {
    if constexpr (sizeof(Scalar) == 8)
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0, A.data(), K, B.data(), N, 0.0, Cref.data(), N);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, Cref.data(), N);
  };
  const double flops = k::gemm_flops(double(M), double(N), double(K));
  const int per_block = std::max(3, int(std::min(5.0, 2e9 / flops)));
  auto p = alternate([&] { k::gemm(exec, k::Trans::no, k::Trans::no, Scalar(1), A, B, Scalar(0), C); exec.fence(); },
                     blas, quick ? 2 : 3, per_block);
  double worst = 0;  // the two results agree to rounding (|a|, |b| <= 1: |c| <= K)
  for (std::int64_t i = 0; i < M * N; ++i)
    worst = std::max(worst, std::abs(double(C.data()[i]) - double(Cref.data()[i])) / double(K));
  const double ours = flops / median(p.ours) * 1e-9, theirs = flops / median(p.theirs) * 1e-9;
  (sizeof(Scalar) == 8 ? best_dgemm : best_sgemm) = std::max(sizeof(Scalar) == 8 ? best_dgemm : best_sgemm, theirs);
  char what[96];
  std::snprintf(what, sizeof what, "gemm %s %lldx%lldx%lld", sizeof(Scalar) == 8 ? "float64" : "float32",
                (long long)M, (long long)N, (long long)K);
  const char* blas_name = sizeof(Scalar) == 8 ? "OpenBLAS dgemm" : "OpenBLAS sgemm";
  rows.push_back({what, "gemm", blas_name, ours, theirs, "GFLOP/s", 0.6});
  report(rows.back());
  if (worst > (sizeof(Scalar) == 8 ? 1e-12 : 1e-4))
    std::fprintf(stderr, "yardsticks: gemm results differ from OpenBLAS by %g (relative to K)\n", worst);
#ifdef SEXTANT_HAVE_KOKKOS_KERNELS
  // The vendor path: KokkosBlas::gemm on the BLAS TPL, row-major Views, against the
  // library called directly (what the path may cost on top of it).
  auto v = alternate(
      [&] { k::vendor_gemm(exec, k::Trans::no, k::Trans::no, Scalar(1), A, B, Scalar(0), C); exec.fence(); }, blas,
      quick ? 2 : 3, per_block);
  rows.push_back({what, "vendor_gemm", blas_name, flops / median(v.ours) * 1e-9, flops / median(v.theirs) * 1e-9,
                  "GFLOP/s", 0.9});
  report(rows.back());
#endif
}

// --- peak -------------------------------------------------------------------------

// The suite's sweep over register widths and accumulator counts, keeping the fastest
// (as `sextant fit` does).
struct PeakRate {
  double gflops = 0;
  int vectors = 0, bits = 0;
  std::string label() const { return "peak_fma v=" + std::to_string(vectors) + ",bits=" + std::to_string(bits); }
};
template <class Scalar>
PeakRate peak_rate(bool quick) {
  Exec exec;
  const std::int64_t items = 16384;
  const int reps = 1000;
  k::View1<Scalar, Exec> out("out", items);
  PeakRate best;
  for (int bits : k::peak_vector_bits<Exec>())
    for (int vectors : k::peak_vector_counts<Exec>(bits / 8)) {
      std::vector<double> t;
      k::peak_fma(exec, out, reps, vectors, bits);
      exec.fence();
      for (int r = 0; r < (quick ? 5 : 11); ++r) {
        const double t0 = now();
        k::peak_fma(exec, out, reps, vectors, bits);
        exec.fence();
        t.push_back(now() - t0);
      }
      const double rate = k::peak_flops<Exec, Scalar>(double(items), reps, vectors, bits) / median(t) * 1e-9;
      if (rate > best.gflops) best = {rate, vectors, bits};
    }
  return best;
}

// The exp rate: exponentials per second of peak_exp on L1-sized rows, a few per thread.
template <class Scalar>
double exp_rate(bool quick) {
  Exec exec;
  const std::int64_t rows = 8 * exec.concurrency(), cols = 4096 / std::int64_t(sizeof(Scalar));
  const int reps = 200;
  Kokkos::View<Scalar**, Kokkos::LayoutRight, Exec> y("y", rows, cols);
  Kokkos::deep_copy(y, Scalar(0.5));
  k::peak_exp(exec, y, reps);
  exec.fence();
  std::vector<double> t;
  for (int r = 0; r < (quick ? 5 : 11); ++r) {
    const double t0 = now();
    k::peak_exp(exec, y, reps);
    exec.fence();
    t.push_back(now() - t0);
  }
  return k::peak_exp_count(double(rows), double(cols), reps) / median(t);
}

// The compute ceilings a roof row charges: FLOPs at peak_fma's rate, exponentials at
// peak_exp's (per second).
struct ComputeRates {
  double peak64 = 0, peak32 = 0, exp64 = 0, exp32 = 0;
};

// --- elementwise kernels at their roofs -------------------------------------------

// The kernels whose cost is their memory traffic, or their arithmetic: for GELU and
// softmax mostly their exponentials, each ~20 vector operations counted as one FLOP, so
// their compute time is their other FLOPs at the FMA peak plus their exponentials at the
// exp rate (the two share the core's vector pipes, so their times add). The operator
// models' roofline has no exp term yet: their fitted compute efficiency absorbs it.
constexpr const char* roof_kernels[] = {"bias_gelu_forward", "bias_gelu_backward", "layernorm_forward",
                                        "layernorm_backward", "softmax_forward",   "softmax_backward",
                                        "adamw_update",      "embedding_forward", "embedding_backward"};

// The roof rows' reference for a kernel that updates arrays in place (a working set
// smaller than its traffic): the kernel's stream mix over a working set of the same
// size, `arrays` float64 arrays of which the last `updated` are written back,
// x_u += q (sum of the read-only ones), counted as the kernel counts its own (each
// array read once, each updated one written once). Its stores find their lines in
// cache; a triad's go to an array of their own, whose lines are read first
// (write-allocate, uncounted), so from the same level an update in place moves its
// counted bytes ~1.6x faster than a triad, and how much faster depends on the mix.
// One fused loop per mix (a loop per array, through a block in L1, measured 25% slower
// from L3), on arrays aligned to the cache line as the kernels' Views are (a vector
// load that spans two lines costs two).
class InPlaceUpdate {
 public:
  InPlaceUpdate(double working_set, k::KernelInfo::InPlace mix)
      : n_(std::max<std::int64_t>(1, std::int64_t(working_set / (8.0 * mix.arrays)))),
        x_(mix.arrays),
        updated_(mix.updated),
        run_(select(mix.arrays - mix.updated, mix.updated)) {
    if (!run_)
      throw std::invalid_argument("no in-place reference for " + std::to_string(mix.updated) + " of " +
                                  std::to_string(mix.arrays) + " arrays updated");
    const std::size_t size = (std::size_t(n_) * sizeof(double) + 63) / 64 * 64;
    for (auto& x : x_) {
      x.reset(static_cast<double*>(std::aligned_alloc(64, size)));
      if (!x) throw std::bad_alloc();
      double* p = x.get();
#pragma omp parallel for schedule(static)  // first touch by the threads that update them
      for (std::int64_t i = 0; i < n_; ++i) p[i] = 1e-9;
    }
  }
  void run() { (this->*run_)(); }
  double bytes() const { return double(x_.size() + updated_) * double(n_) * sizeof(double); }

 private:
  template <int read_only, int updated>
  void sweep() {
    double* x[read_only + updated];
    for (int a = 0; a < read_only + updated; ++a) x[a] = x_[a].get();
#pragma omp parallel for simd schedule(static)  // (simd: the arrays are distinct)
    for (std::int64_t i = 0; i < n_; ++i) {
      double sum = 0;
      for (int a = 0; a < read_only; ++a) sum += x[a][i];
      for (int a = read_only; a < read_only + updated; ++a) x[a][i] += 0.5 * sum;
    }
  }
  using Sweep = void (InPlaceUpdate::*)();
  static Sweep select(int read_only, int updated) {
    static constexpr Sweep table[2][4] = {
        {&InPlaceUpdate::sweep<1, 1>, &InPlaceUpdate::sweep<1, 2>, &InPlaceUpdate::sweep<1, 3>, &InPlaceUpdate::sweep<1, 4>},
        {&InPlaceUpdate::sweep<2, 1>, &InPlaceUpdate::sweep<2, 2>, &InPlaceUpdate::sweep<2, 3>, &InPlaceUpdate::sweep<2, 4>}};
    if (read_only < 1 || read_only > 2 || updated < 1 || updated > 4) return nullptr;
    return table[read_only - 1][updated - 1];
  }

  struct Free {
    void operator()(double* p) const { std::free(p); }
  };
  std::int64_t n_;
  std::vector<std::unique_ptr<double[], Free>> x_;
  int updated_;
  Sweep run_;
};

void roofs(const ComputeRates& rates, const std::vector<std::string>& only) {
  const k::KernelInfo* triad = k::find_kernel("stream_triad");
  for (const char* name : roof_kernels) {
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    const k::KernelInfo* info = k::find_kernel(name);
    if (!info) continue;
    for (k::Dtype dtype : {k::Dtype::float32, k::Dtype::float64}) {
      for (const k::Shape& shape : info->quick_shapes) {
        const double flops = info->flops(shape, dtype), bytes = info->bytes(shape, dtype);
        const double exps = info->exps ? info->exps(shape, dtype) : 0.0;
        auto kernel = info->make(shape, dtype, 21);
        // A stream over a working set of the kernel's size, written the way the kernel
        // writes: the bandwidth of the cache level (or memory) its data lives in.
        const bool in_place = info->in_place.arrays > 0;
        const double working_set = info->working_set(shape, dtype);
        std::unique_ptr<k::Instance> triad_reference;
        std::optional<InPlaceUpdate> update_reference;
        double reference_bytes = 0;
        if (in_place) {
          update_reference.emplace(working_set, info->in_place);
          reference_bytes = update_reference->bytes();
        } else {
          const k::Shape triad_shape{{"n", std::max<std::int64_t>(1, std::int64_t(working_set / 24))}};
          triad_reference = triad->make(triad_shape, k::Dtype::float64, 22);
          reference_bytes = triad->bytes(triad_shape, k::Dtype::float64);
        }
        const int per_block = std::max(5, int(std::min(50.0, 2e8 / bytes)));
        auto p = alternate([&] { kernel->run(); },
                           [&] { in_place ? update_reference->run() : triad_reference->run(); }, 4, per_block);
        const double t = median(p.ours), bandwidth = reference_bytes / median(p.theirs);
        const bool f64 = dtype == k::Dtype::float64;
        const double peak = (f64 ? rates.peak64 : rates.peak32), exp_rate = (f64 ? rates.exp64 : rates.exp32);
        const double t_memory = bytes / bandwidth, t_compute = (flops - exps) / peak + exps / exp_rate;
        char what[96], reference[64];
        std::snprintf(reference, sizeof reference, "%d of %d updated in place", info->in_place.updated,
                      info->in_place.arrays);
        std::snprintf(what, sizeof what, "%s %s", name, std::string(k::to_string(dtype)).c_str());
        // Rates of the kernel's bound quantity: achieved vs at the bound (ratio = bound / time).
        if (t_memory >= t_compute)
          rows.push_back({what, "(bytes)", in_place ? reference : "triad, same working set",
                          bytes / t * 1e-9, bytes / t_memory * 1e-9, "GB/s", 0.7});
        else if (exps == 0)
          rows.push_back({what, "(FLOPs)", "peak_fma", flops / t * 1e-9, peak * 1e-9, "GFLOP/s", 0.7});
        else  // the same rate of counted FLOPs at the roof's time
          rows.push_back(
              {what, "(FLOPs)", "peak_fma + peak_exp", flops / t * 1e-9, flops / t_compute * 1e-9, "GFLOP/s", 0.7});
        report(rows.back());
      }
    }
  }
}

ComputeRates compute_rates(const PeakRate& p64, const PeakRate& p32, bool quick) {
  const ComputeRates r{p64.gflops * 1e9, p32.gflops * 1e9, exp_rate<double>(quick), exp_rate<float>(quick)};
  std::printf("# the roofs' exp rate (peak_exp): float64 %.2f, float32 %.2f Gexp/s; one exp per %.1f resp. %.1f FLOPs "
              "of the peak\n",
              r.exp64 * 1e-9, r.exp32 * 1e-9, r.peak64 / r.exp64, r.peak32 / r.exp32);
  return r;
}

// A thread inherits its creator's CPU mask. With OMP_PROC_BIND set, libgomp pins the
// initial thread to one CPU, and OpenBLAS's pthreads, created on first use, would all
// inherit that one CPU (measured: 2 threads no faster than 1). Start OpenBLAS's pool
// from a moment when the initial thread may use every CPU, then pin it back.
void start_openblas_unpinned(int threads) {
  cpu_set_t pinned, all;
  const bool have_mask = sched_getaffinity(0, sizeof pinned, &pinned) == 0;
  CPU_ZERO(&all);
  for (int c = 0; c < get_nprocs_conf() && c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
  if (have_mask) sched_setaffinity(0, sizeof all, &all);  // the kernel keeps it within our cpuset
  openblas_set_num_threads(threads);
  const int n = 512;  // large enough for OpenBLAS to use its threads
  std::vector<double> a(n * n, 0.5), c(n * n);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, a.data(), n, 0.0, c.data(), n);
  if (have_mask) sched_setaffinity(0, sizeof pinned, &pinned);
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  {  // the host GEMM blocks for this CPU's caches
    const auto machine = sextant::read_machine_info();
    sextant::kernels::set_host_caches({machine.l1_data_cache_bytes(), machine.private_cache_bytes()});
  }
  bool quick = false;
  long long stream_bytes = 0;
  std::vector<std::string> roofs_only;  // --roofs a,b: only these kernels' roof rows
  bool gemm_only = false;               // --gemm: the GEMM rows alone (tuning its blocks)
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--gemm")) gemm_only = true;
    else if (!std::strcmp(argv[i], "--stream-bytes") && i + 1 < argc) stream_bytes = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--roofs") && i + 1 < argc) {
      for (std::string list = argv[++i]; !list.empty();) {
        const auto comma = list.find(',');
        roofs_only.push_back(list.substr(0, comma));
        list = comma == std::string::npos ? "" : list.substr(comma + 1);
      }
    }
    else {
      std::fprintf(stderr, "usage: sextant_yardsticks [--quick] [--gemm] [--stream-bytes N] [--roofs KERNEL,...] [Kokkos options]\n");
      return 2;
    }
  }
  const int threads = Exec().concurrency();
  k::flush_subnormals(threads);  // the suites' floating-point environment
  start_openblas_unpinned(threads);
  omp_set_num_threads(threads);
  const auto machine = sextant::read_machine_info();
  const long long llc = machine.last_level_cache_bytes();
  if (stream_bytes <= 0) stream_bytes = std::min(4 * llc, quick ? (512LL << 20) : (3LL << 30));

  std::printf("# compute yardsticks: %d threads on both sides (Kokkos %s, OpenMP, OpenBLAS %s core), %s\n", threads,
              Exec::name(), openblas_get_corename(), machine.cpu_model.c_str());
  std::printf("# kernels built for %s (%d-byte vectors, %d registers)\n", k::isa::name, k::isa::vector_bytes,
              k::isa::vector_registers);
  for (int bytes : {8, 4}) {
    const auto b = bytes == 8 ? k::GemmTiling<Exec, double>::blocks() : k::GemmTiling<Exec, float>::blocks();
    std::printf("# host GEMM blocks float%d: MB %d, NB %d, KB %d (%s: L1d %lld KiB, L2 %lld KiB)\n", bytes * 8, b.mb,
                b.nb, b.kb, b.source.c_str(), k::host_caches().l1d_bytes >> 10, k::host_caches().l2_bytes >> 10);
  }
  std::printf("# LLC reported %lld MiB; triad working set %lld MiB%s. Ratios are sextant / reference, of medians.\n",
              llc >> 20, stream_bytes >> 20,
              stream_bytes < 4 * llc ? " (below 4 x LLC: the VM's reported L3 is huge, capped)" : "");
  std::printf("%-36s %15s %-12s %15s %-22s %6s  %s\n", "yardstick", "sextant", "(kernel)", "reference", "(implementation)",
              "ratio", "goal");

  if (!roofs_only.empty()) {  // the roof rows of these kernels alone, at the peak sweep's rates
    roofs(compute_rates(peak_rate<double>(true), peak_rate<float>(true), true), roofs_only);
    return 0;
  }
  if (!gemm_only) triad(stream_bytes / 24, quick);

  std::vector<std::array<std::int64_t, 3>> shapes = {{1024, 1024, 1024}, {2048, 2048, 2048}, {1000, 1000, 1000},
                                                     {2048, 3072, 768},  {2048, 768, 3072}};
  if (quick) shapes = {{1024, 1024, 1024}, {1000, 1000, 1000}};
  for (const auto& s : shapes) gemm<double>(s[0], s[1], s[2], quick);
  for (const auto& s : shapes) gemm<float>(s[0], s[1], s[2], quick);
  if (gemm_only) return 0;

  pause_between_sides();
  // The ceiling must beat every real kernel, the vendor's best GEMM included.
  const PeakRate p64 = peak_rate<double>(quick), p32 = peak_rate<float>(quick);
  rows.push_back({"peak_fma float64 vs best dgemm", p64.label(),
                  "OpenBLAS dgemm (best)", p64.gflops, best_dgemm, "GFLOP/s", 1.05});
  report(rows.back());
  rows.push_back({"peak_fma float32 vs best sgemm", p32.label(),
                  "OpenBLAS sgemm (best)", p32.gflops, best_sgemm, "GFLOP/s", 1.05});
  report(rows.back());
  rows.push_back({"peak_fma float32 vs float64", "peak_fma", "peak_fma float64", p32.gflops, p64.gflops, "GFLOP/s",
                  1.9});
  report(rows.back());

  pause_between_sides();
  roofs(compute_rates(p64, p32, quick), roofs_only);

  int missed = 0;
  for (const auto& r : rows) missed += r.ours / r.theirs < r.goal;
  std::printf("# %zu yardsticks, %d goals missed\n", rows.size(), missed);
  return 0;
}
