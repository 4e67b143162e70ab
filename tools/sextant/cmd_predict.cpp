// sextant predict MODEL --op OP --bytes N [--ranks P] [--level L] [--dtype T] [--explain]
#include <iostream>

#include "core/units.hpp"
#include "models/comm_model.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {

void register_predict(CLI::App& app, Context&) {
  struct Args {
    std::string model, op, bytes, level = "world", dtype = "float32";
    int ranks = 0;
    bool explain = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("predict", "Predict an operation's time from a model file");
  cmd->add_option("model", a->model, "model file (sextant.model)")->required();
  cmd->add_option("--op", a->op, "benchmark/collective name, e.g. allreduce, pingpong");
  cmd->add_option("--bytes", a->bytes, "message size (K/M/G suffixes), in the benchmark's size unit");
  cmd->add_option("--ranks", a->ranks, "rank count (default: the fitted one)");
  cmd->add_option("--level", a->level, "world | intra | inter");
  cmd->add_option("--dtype", a->dtype, "int32 | float32 | float64");
  cmd->add_flag("--explain", a->explain, "show the terms of the prediction");
  cmd->callback([a] {
    auto m = model::CommModel::read(a->model);
    if (a->op.empty()) {
      std::cout << a->model << ": " << m.fits.size() << " communication fits (use --op and --bytes):\n";
      for (const auto& f : m.fits)
        std::cout << "  " << f.benchmark << "  level=" << f.level << "  dtype=" << f.dtype << "  ranks=" << f.ranks
                  << "  bytes " << format_bytes(f.bytes_min) << " .. " << format_bytes(f.bytes_max) << "\n";
      return;
    }
    if (a->bytes.empty()) throw UsageError("--bytes is required with --op");
    double bytes = static_cast<double>(parse_bytes(a->bytes));
    const model::CommFit* f = m.find(a->op, a->level, a->dtype, a->ranks);
    int ranks = a->ranks > 0 ? a->ranks : (f ? f->ranks : 0);
    auto p = m.predict(a->op, bytes, ranks, a->level, a->dtype);
    std::printf("%s %s on %d ranks (%s, %s): %s  [%s, %s]  busbw %.3f GB/s\n", a->op.c_str(),
                format_bytes(bytes).c_str(), ranks, a->level.c_str(), p.from->dtype.c_str(),
                format_seconds(p.seconds).c_str(), format_seconds(p.lo).c_str(), format_seconds(p.hi).c_str(),
                p.busbw / 1e9);
    if (p.extrapolated_bytes)
      std::printf("EXTRAPOLATION: %s is outside the fitted range %s .. %s\n", format_bytes(bytes).c_str(),
                  format_bytes(p.from->bytes_min).c_str(), format_bytes(p.from->bytes_max).c_str());
    if (p.extrapolated_ranks) std::printf("EXTRAPOLATION: %s\n", p.note.c_str());
    if (a->explain) {
      const auto& s = p.from->fit.segments[p.segment];
      std::printf("  view        %s fit of %s at %d ranks, level %s\n", p.from->view.c_str(),
                  p.from->benchmark.c_str(), p.from->ranks, p.from->level.c_str());
      std::printf("  segment     %zu of %zu: %s .. %s (%zu sizes, R^2 %.4f, rms rel residual %.1f%%)\n",
                  p.segment + 1, p.from->fit.segments.size(), format_bytes(s.lo_bytes).c_str(),
                  format_bytes(s.hi_bytes).c_str(), s.points, s.r2, 100 * s.rms_rel_residual);
      std::printf("  alpha part  %s  (alpha %s, 95%% CI [%s, %s])\n", format_seconds(p.alpha_part).c_str(),
                  format_seconds(s.alpha).c_str(), format_seconds(s.alpha_ci.lo).c_str(),
                  format_seconds(s.alpha_ci.hi).c_str());
      std::printf("  beta part   %s  (1/beta %.3f GB/s)\n", format_seconds(p.beta_part).c_str(),
                  s.beta > 0 ? 1e-9 / s.beta : 0.0);
      std::printf("  gamma part  0 (folded into beta in the direct view)\n");
    }
  });
}

}  // namespace sextant::cli
