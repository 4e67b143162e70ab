// kernel_check: every registry kernel on Kokkos' default execution space (a GPU in a
// CUDA build), without MPI, HDF5 or Google Benchmark. Per kernel, dtype and shape:
// validated against the serial reference (outputs poisoned with NaN, one run, compared
// within the reference's error bound), and for the timed shape set also timed (one
// warm-up run, then fenced runs until a time budget or a run count is reached; the
// median reported with its GFLOP/s and GB/s from the kernel's analytic counts).
//
//   kernel_check [--validate test|quick|full|none]...  shape sets validated (default test, quick)
//                [--time quick|full|test|none]          shape set timed (default quick)
//                [--kernels a,b] [--dtypes float32,...]
//                [--budget SECONDS] [--max-runs N] [--min-runs N]   per timed case
//                [--list]                               the kernel names, one a line
//                [Kokkos options, e.g. --kokkos-device-id=0]
//
// Exit status: 0 when every validation passed and no case failed to run, 1 otherwise,
// 2 for a usage error. The last line is "N passed, N failed" over all checks.
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/registry.hpp"

namespace {

namespace k = sextant::kernels;

struct Options {
  std::vector<k::ShapeSet> validate = {k::ShapeSet::test, k::ShapeSet::quick};
  bool validate_given = false;
  bool time = true;
  k::ShapeSet time_set = k::ShapeSet::quick;
  std::vector<std::string> kernels, dtypes;
  double budget = 0.25;  // seconds of timed runs per case
  int max_runs = 200, min_runs = 3;
  bool list = false;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

bool parse_set(const std::string& s, k::ShapeSet& out) {
  if (s == "test") out = k::ShapeSet::test;
  else if (s == "quick") out = k::ShapeSet::quick;
  else if (s == "full") out = k::ShapeSet::full;
  else return false;
  return true;
}

const char* set_name(k::ShapeSet s) {
  switch (s) {
    case k::ShapeSet::test: return "test";
    case k::ShapeSet::quick: return "quick";
    case k::ShapeSet::full: return "full";
  }
  return "?";
}

// Options are taken out of argv; the rest is left for Kokkos.
bool parse(int& argc, char** argv, Options& o) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag, std::string& v) {
      const std::size_t n = std::strlen(flag);
      if (a.compare(0, n, flag) != 0) return false;
      if (a.size() > n && a[n] == '=') {
        v = a.substr(n + 1);
        return true;
      }
      if (a.size() == n && i + 1 < argc) {
        v = argv[++i];
        return true;
      }
      return false;
    };
    std::string v;
    if (a == "-h" || a == "--help") {
      std::printf(
          "usage: kernel_check [--validate test|quick|full|none]... [--time quick|full|test|none]\n"
          "                    [--kernels a,b] [--dtypes float32,...] [--budget S] [--max-runs N]\n"
          "                    [--min-runs N] [--list] [Kokkos options]\n");
      std::exit(0);
    } else if (a == "--list") {
      o.list = true;
    } else if (value("--validate", v)) {
      if (!o.validate_given) o.validate.clear();
      o.validate_given = true;
      for (const auto& s : split(v)) {
        if (s == "none") continue;
        k::ShapeSet set;
        if (!parse_set(s, set)) return false;
        o.validate.push_back(set);
      }
    } else if (value("--time", v)) {
      if (v == "none") o.time = false;
      else if (!parse_set(v, o.time_set)) return false;
    } else if (value("--kernels", v)) {
      o.kernels = split(v);
    } else if (value("--dtypes", v)) {
      o.dtypes = split(v);
    } else if (value("--budget", v)) {
      o.budget = std::stod(v);
    } else if (value("--max-runs", v)) {
      o.max_runs = std::stoi(v);
    } else if (value("--min-runs", v)) {
      o.min_runs = std::stoi(v);
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return true;
}

bool wanted(const std::vector<std::string>& list, const std::string& v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Tally {
  int passed = 0, failed = 0, errors = 0;
};

// One case: make, optionally validate, optionally time. Prints one line.
void run_case(const k::KernelInfo& kernel, k::Dtype dtype, const k::Shape& shape, k::ShapeSet set,
              bool validate, bool time, const Options& o, Tally& tally) {
  const std::string dt(k::to_string(dtype));
  std::printf("%-20s %-8s %-5s %-44s", kernel.name.c_str(), dt.c_str(), set_name(set), shape.str().c_str());
  std::fflush(stdout);
  const double t_case = now();
  try {
    auto instance = kernel.make(shape, dtype, 20240611);
    std::string verdict = "-";
    std::string message;
    if (validate) {
      const k::Validation v = instance->validate();
      const bool ok = v.ok && v.wrong == 0 && v.compared > 0 && v.worst <= 1.0;
      (ok ? tally.passed : tally.failed)++;
      std::ostringstream s;
      s << (ok ? "PASS" : "FAIL") << " err/bound=" << v.worst << " cmp=" << v.compared;
      verdict = s.str();
      if (!ok) message = v.message.empty() ? "(compared nothing)" : v.message;
    }
    if (time) {
      instance->run();  // warm-up
      std::vector<double> seconds;
      const double start = now();
      while (int(seconds.size()) < o.min_runs ||
             (now() - start < o.budget && int(seconds.size()) < o.max_runs)) {
        Kokkos::Timer timer;
        instance->run();  // fenced
        seconds.push_back(timer.seconds());
      }
      std::sort(seconds.begin(), seconds.end());
      const double median = seconds[seconds.size() / 2];
      const double flops = kernel.flops(shape, dtype), bytes = kernel.bytes(shape, dtype);
      std::printf(" %11.4f ms %10.2f GFLOP/s %9.2f GB/s %4zu runs (min %.4f ms)", median * 1e3,
                  median > 0 ? flops / median * 1e-9 : 0.0, median > 0 ? bytes / median * 1e-9 : 0.0,
                  seconds.size(), seconds.front() * 1e3);
    }
    std::printf("  %s  [%.2f s]\n", verdict.c_str(), now() - t_case);
    if (!message.empty()) std::printf("    WRONG: %s\n", message.c_str());
  } catch (const std::exception& e) {
    ++tally.errors;
    std::printf("  ERROR  [%.2f s]\n    ERROR: %s\n", now() - t_case, e.what());
  }
  std::fflush(stdout);
}

}  // namespace

int check(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr, "kernel_check: bad option (see --help)\n");
    return 2;
  }
  if (o.list) {  // the registry's names need no Kokkos
    for (const auto& kernel : k::registry()) std::printf("%s\n", kernel.name.c_str());
    return 0;
  }
  Kokkos::ScopeGuard kokkos(argc, argv);
  using Exec = Kokkos::DefaultExecutionSpace;
  std::printf("kernel_check: Kokkos %d, default execution space %s (concurrency %d)\n", KOKKOS_VERSION,
              Exec::name(), int(Exec().concurrency()));
  const auto isa = k::compiled_isa();
  std::printf("kernel_check: kernels compiled for ISA %.*s; dtypes here:", int(isa.name.size()), isa.name.data());
  for (auto d : k::available_dtypes()) std::printf(" %.*s", int(k::to_string(d).size()), k::to_string(d).data());
  std::printf("\n");
  if (o.kernels.empty()) {  // once per full run, not for each kernel run alone
    std::ostringstream config;
    Kokkos::print_configuration(config, false);
    std::printf("%s\n", config.str().c_str());
  }
  for (const auto& name : o.kernels)
    if (!k::find_kernel(name)) {
      std::fprintf(stderr, "kernel_check: no kernel %s\n", name.c_str());
      return 2;
    }

  Tally tally;
  const double t0 = now();
  std::printf("%-20s %-8s %-5s %-44s %14s %18s %14s\n", "kernel", "dtype", "set", "shape", "median", "rate", "bandwidth");
  for (const auto& kernel : k::registry()) {
    if (!wanted(o.kernels, kernel.name)) continue;
    for (k::Dtype dtype : kernel.dtypes) {
      if (!wanted(o.dtypes, std::string(k::to_string(dtype)))) continue;
      // Validation-only sets first, then the timed set (validated too when asked).
      std::vector<k::ShapeSet> sets = o.validate;
      if (o.time && std::find(sets.begin(), sets.end(), o.time_set) == sets.end()) sets.push_back(o.time_set);
      std::sort(sets.begin(), sets.end());
      sets.erase(std::unique(sets.begin(), sets.end()), sets.end());
      for (k::ShapeSet set : sets) {
        const bool validate = std::find(o.validate.begin(), o.validate.end(), set) != o.validate.end();
        const bool time = o.time && set == o.time_set;
        for (const auto& shape : kernel.shapes(set)) run_case(kernel, dtype, shape, set, validate, time, o, tally);
      }
    }
  }
  std::printf("kernel_check: %.1f s; %d errors (cases that threw)\n", now() - t0, tally.errors);
  std::printf("%d passed, %d failed\n", tally.passed, tally.failed + tally.errors);
  return tally.failed + tally.errors == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  try {
    return check(argc, argv);
  } catch (const std::exception& e) {  // e.g. Kokkos finding no usable GPU
    std::fflush(stdout);
    std::fprintf(stderr, "kernel_check: %s\n", e.what());
    return 1;
  }
}
