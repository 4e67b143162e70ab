// sextant fit RESULTS [-o MODEL]: fit models to a results file.
#include <algorithm>
#include <iostream>

#include "core/units.hpp"
#include "models/comm_model.hpp"
#include "suites/common/runtime.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {

std::string default_model_path(const std::string& results) {
  auto dot = results.rfind(".h5");
  return (dot == std::string::npos ? results : results.substr(0, dot)) + ".model.h5";
}

namespace {
void print_holdout(const std::string& results) {
  auto rows = model::holdout_check(results);
  std::printf("held-out check: fit on every other size, mean absolute %% error on the others\n");
  std::printf("%-16s %-6s %-8s %5s %14s %14s\n", "benchmark", "level", "dtype", "ranks", "MAPE <64KiB",
              "MAPE >=64KiB");
  std::vector<double> small, large;
  for (const auto& r : rows) {
    auto cell = [](std::size_t n, double v) {
      char buf[32];
      if (n)
        std::snprintf(buf, sizeof buf, "%6.1f%% (%zu)", v, n);
      else
        std::snprintf(buf, sizeof buf, "-");
      return std::string(buf);
    };
    std::printf("%-16s %-6s %-8s %5d %14s %14s\n", r.benchmark.c_str(), r.level.c_str(), r.dtype.c_str(), r.ranks,
                cell(r.small_n, r.small_mape).c_str(), cell(r.large_n, r.large_mape).c_str());
    if (r.small_n) small.push_back(r.small_mape);
    if (r.large_n) large.push_back(r.large_mape);
  }
  auto med = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  auto worst = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
  std::printf("over benchmarks: <64KiB median %.1f%% max %.1f%%   >=64KiB median %.1f%% max %.1f%%\n", med(small),
              worst(small), med(large), worst(large));
}
}  // namespace

void register_fit(CLI::App& app, Context& ctx) {
  auto results = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto holdout = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("fit", "Fit models to a results file and write a model file");
  cmd->add_option("results", *results, "results file (sextant.results)")->required();
  cmd->add_option("-o,--output", *output, "model file (default RESULTS with .model.h5)");
  cmd->add_flag("--holdout", *holdout,
                "check instead of writing: fit every other size, report the error on the sizes left out");
  cmd->callback([&ctx, results, output, holdout] {
    if (*holdout) {
      print_holdout(*results);
      return;
    }
    std::string out = output->empty() ? default_model_path(*results) : *output;
    auto model = model::CommModel::fit_results(*results);
    model.write(out, local_provenance(ctx.argc, ctx.argv));
    std::printf("%-16s %-6s %-8s %5s %4s %12s %12s %10s\n", "benchmark", "level", "dtype", "ranks", "seg",
                "alpha(us)", "bw(GB/s)", "max rms");
    for (const auto& f : model.fits) {
      const auto& s0 = f.fit.segments.front();
      const auto& sl = f.fit.segments.back();
      double rms = 0;
      for (const auto& s : f.fit.segments) rms = std::max(rms, s.rms_rel_residual);
      std::printf("%-16s %-6s %-8s %5d %4zu %12.3f %12.3f %9.1f%%%s\n", f.benchmark.c_str(), f.level.c_str(),
                  f.dtype.c_str(), f.ranks, f.fit.segments.size(), s0.alpha * 1e6,
                  sl.beta > 0 ? 1e-9 / sl.beta : 0.0, rms * 100, f.oversubscribed ? "  (oversubscribed)" : "");
    }
    for (const auto& l : model.loggp)
      std::printf("LogGP %s: L+2o %s  g %s  G %s/byte (%.3f GB/s)\n", l.level.c_str(),
                  format_seconds(l.L_plus_2o).c_str(), format_seconds(l.g).c_str(), format_seconds(l.G).c_str(),
                  l.G > 0 ? 1e-9 / l.G : 0.0);
    for (const auto& a : model.algorithms) {
      std::printf("algorithms %s %s p=%d:", a.benchmark.c_str(), a.level.c_str(), a.ranks);
      for (const auto& r : a.ranges) {
        std::string alg = r.algorithm;
        for (const auto& t : r.indistinguishable) alg += "=" + t;
        std::printf(" %s..%s %s (x%.2f);", format_bytes(r.lo_bytes).c_str(), format_bytes(r.hi_bytes).c_str(),
                    alg.c_str(), r.calibration);
      }
      std::printf("\n");
    }
    std::cerr << "sextant: wrote " << out << " (" << model.fits.size() << " fits)\n";
  });
}

}  // namespace sextant::cli
