// sextant fit RESULTS [-o MODEL]: fit models to a results file.
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

void register_fit(CLI::App& app, Context& ctx) {
  auto results = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("fit", "Fit models to a results file and write a model file");
  cmd->add_option("results", *results, "results file (sextant.results)")->required();
  cmd->add_option("-o,--output", *output, "model file (default RESULTS with .model.h5)");
  cmd->callback([&ctx, results, output] {
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
    std::cerr << "sextant: wrote " << out << " (" << model.fits.size() << " fits)\n";
  });
}

}  // namespace sextant::cli
