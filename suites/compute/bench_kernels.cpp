// Google Benchmark harness of the compute kernels: every registered kernel x dtype x
// shape, validated once against its reference (a wrong result skips the benchmark with
// an error and makes the exit status 1), then timed with manual time, each run fenced.
// Counters: FLOP/s and bytes/s as rates (analytic counts, see each kernel's header),
// arithmetic intensity (FLOP/byte), and the counts themselves. Also the working-set
// sweep of triad and dot (sweep_triad/..., sweep_dot/...): from a quarter of an L1 per thread to
// 4 x the last-level cache, capped at 1 GiB (this VM reports a 480 MiB L3).
//
//   sextant_compute_bench [--sextant_shapes=quick|full|test] [--sextant_kernels=a,b]
//                         [--sextant_dtypes=float64,...] [--sextant_sweep=true|false]
//                         [Kokkos options] [Google Benchmark options, e.g.
//                          --benchmark_out=r.json --benchmark_out_format=json]
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/machine.hpp"
#include "kernels/gemm_blocks.hpp"
#include "kernels/registry.hpp"
#include "kernels/stream.hpp"
#include "suites/compute/measure.hpp"

namespace {

namespace k = sextant::kernels;

struct Options {
  k::ShapeSet shapes = k::ShapeSet::quick;
  std::vector<std::string> kernels, dtypes;
  bool sweep = true;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Takes the --sextant_* options out of argv (Google Benchmark rejects unknown flags).
Options parse(int& argc, char** argv) {
  Options o;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const std::size_t n = std::strlen(flag);
      return a.compare(0, n, flag) == 0 ? argv[i] + n : nullptr;
    };
    if (const char* v = value("--sextant_shapes=")) {
      std::string s = v;
      if (s == "quick") o.shapes = k::ShapeSet::quick;
      else if (s == "full") o.shapes = k::ShapeSet::full;
      else if (s == "test") o.shapes = k::ShapeSet::test;
      else throw std::invalid_argument("--sextant_shapes: quick, full or test, not " + s);
    } else if (const char* v = value("--sextant_kernels=")) {
      o.kernels = split(v);
      for (const auto& name : o.kernels)
        if (std::none_of(k::registry().begin(), k::registry().end(), [&](const auto& d) { return d.name == name; }))
          throw std::invalid_argument("--sextant_kernels: no kernel named '" + name + "'");
    } else if (const char* v = value("--sextant_dtypes=")) {
      for (const auto& name : split(v)) {
        const auto dtype = k::parse_dtype(name);
        if (!dtype) throw std::invalid_argument("--sextant_dtypes: no dtype named '" + name + "'");
        o.dtypes.emplace_back(k::to_string(*dtype));  // its canonical name, as benchmarks are named
      }
    } else if (const char* v = value("--sextant_sweep=")) {
      const std::string s = v;
      if (s != "true" && s != "false" && s != "1" && s != "0")
        throw std::invalid_argument("--sextant_sweep: true or false, not " + s);
      o.sweep = s == "true" || s == "1";
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return o;
}

bool any_wrong = false;

// The instance of the benchmark running now: Google Benchmark calls a benchmark's
// function several times while sizing its iteration count, and set-up plus validation
// should happen once.
struct Current {
  std::string key;
  std::unique_ptr<k::Instance> instance;
  k::Validation validation;
} current;

void run_kernel(benchmark::State& state, const k::KernelInfo* kernel, k::Dtype dtype, const k::Shape& shape) {
  const std::string key = kernel->name + "/" + std::string(k::to_string(dtype)) + "/" + shape.str();
  if (current.key != key) {
    current.instance.reset();  // free the previous benchmark's memory first
    current.key = key;
    current.instance = kernel->make(shape, dtype, 20240611);
    current.validation = current.instance->validate();
    if (!current.validation.ok) {
      any_wrong = true;
      std::fprintf(stderr, "sextant_compute_bench: %s: WRONG: %s\n", key.c_str(), current.validation.message.c_str());
    }
    current.instance->run();  // warm-up
  }
  if (!current.validation.ok) {
    state.SkipWithError(("wrong result: " + current.validation.message).c_str());
    return;
  }
  for (auto _ : state) {
    Kokkos::Timer timer;
    current.instance->run();  // fenced
    state.SetIterationTime(timer.seconds());
  }
  const double flops = kernel->flops(shape, dtype), bytes = kernel->bytes(shape, dtype);
  using C = benchmark::Counter;
  state.counters["FLOP/s"] = C(flops, C::kIsIterationInvariantRate, C::kIs1000);
  state.counters["bytes/s"] = C(bytes, C::kIsIterationInvariantRate, C::kIs1000);
  state.counters["AI"] = C(bytes > 0 ? flops / bytes : 0.0);
  state.counters["flops"] = C(flops);
  state.counters["bytes"] = C(bytes);
  state.counters["error_vs_bound"] = C(current.validation.worst);  // worst |error| / bound
}

// One launch runs `sweeps` sweeps over the working set; the rate counts them all. The
// arrays and the calibrated sweep count are kept while Google Benchmark sizes its runs.
struct SweepArrays {
  std::int64_t elements = -1;
  int sweeps = 1;
  k::View1<double, Kokkos::DefaultExecutionSpace> a, b, c;
} sweep_arrays;

template <bool Triad>
void run_sweep(benchmark::State& state, std::int64_t elements) {
  using Exec = Kokkos::DefaultExecutionSpace;
  Exec exec;
  constexpr int arrays = Triad ? 3 : 2;
  auto& s = sweep_arrays;
  volatile double sink = 0;
  auto launch = [&](int sweeps) {
    Kokkos::Timer timer;
    if constexpr (Triad)
      k::stream_triad_repeated(exec, s.a, s.b, s.c, 0.4, sweeps);
    else
      sink = sink + k::stream_dot_repeated(exec, s.a, s.b, sweeps);
    exec.fence();
    return timer.seconds();
  };
  if (s.elements != elements) {
    s = {};
    s.elements = elements;
    s.a = decltype(s.a)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "a"), elements);
    s.b = decltype(s.a)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "b"), elements);
    s.c = decltype(s.a)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "c"), elements);
    k::fill_uniform(exec, s.a, 1, 0.5, 1.5);
    k::fill_uniform(exec, s.b, 2, 0.5, 1.5);
    k::fill_uniform(exec, s.c, 3, 0.5, 1.5);
    launch(1);
    for (double t = launch(1); t < 5e-4 && s.sweeps < (1 << 20); t = launch(s.sweeps)) s.sweeps *= 2;
  }
  for (auto _ : state) state.SetIterationTime(launch(s.sweeps));
  const double bytes = double(arrays) * elements * sizeof(double);
  using C = benchmark::Counter;
  state.counters["bytes/s"] = C(bytes * s.sweeps, C::kIsIterationInvariantRate, C::kIs1000);
  state.counters["FLOP/s"] = C(2.0 * elements * s.sweeps, C::kIsIterationInvariantRate, C::kIs1000);
  state.counters["working_set_bytes"] = C(bytes, C::kDefaults, C::kIs1024);
  state.counters["sweeps_per_launch"] = C(s.sweeps);
}

bool wanted(const std::vector<std::string>& list, const std::string& v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

void register_all(const Options& o) {
  for (const auto& kernel : k::registry()) {
    if (!wanted(o.kernels, kernel.name)) continue;
    for (k::Dtype dtype : kernel.dtypes) {
      if (!wanted(o.dtypes, std::string(k::to_string(dtype)))) continue;
      for (const auto& shape : kernel.shapes(o.shapes)) {
        const std::string name = kernel.name + "/" + std::string(k::to_string(dtype)) + "/" + shape.str();
        benchmark::RegisterBenchmark(name.c_str(), run_kernel, &kernel, dtype, shape)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  if (!o.sweep) return;
  sextant::compute::SweepOptions sweep;
  sweep.quick = o.shapes != k::ShapeSet::full;
  const auto plan = sextant::compute::plan_sweep(sweep);
  std::fprintf(stderr, "sextant_compute_bench: working-set sweep %s\n", plan.note.c_str());
  for (long long bytes : plan.sizes) {
    benchmark::RegisterBenchmark(("sweep_triad/float64/bytes:" + std::to_string(bytes)).c_str(), run_sweep<true>,
                                 std::int64_t(bytes / 24))
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("sweep_dot/float64/bytes:" + std::to_string(bytes)).c_str(), run_sweep<false>,
                                 std::int64_t(bytes / 16))
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  {  // the host GEMM blocks for this CPU's caches
    const auto machine = sextant::read_machine_info();
    sextant::kernels::set_host_caches({machine.l1_data_cache_bytes(), machine.private_cache_bytes()});
  }
  Options options;
  try {
    options = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sextant_compute_bench: %s\n", e.what());
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  register_all(options);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  current = {};  // free Views before Kokkos finalises
  sweep_arrays = {};
  return any_wrong ? 1 : 0;
}
