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
    bool ranks_given = false;
    bool explain = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("predict", "Predict an operation's time from a model file");
  cmd->add_option("model", a->model, "model file (sextant.model)")->required();
  cmd->add_option("--op", a->op, "benchmark/collective name, e.g. allreduce, pingpong");
  cmd->add_option("--bytes", a->bytes, "message size (K/M/G suffixes), in the benchmark's size unit");
  cmd->add_option("--ranks", a->ranks, "rank count (default: the fitted one)")->each([a](const std::string&) {
    a->ranks_given = true;
  });
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
    int ranks = a->ranks;
    if (ranks < 0 || (ranks == 0 && a->ranks_given)) throw UsageError("--ranks " + std::to_string(ranks) + ": must be >= 1");
    if (ranks == 0) {
      auto fitted = m.fitted_ranks(a->op, a->level, a->dtype);
      if (fitted.size() > 1) {
        std::string list;
        for (int r : fitted) list += (list.empty() ? "" : ", ") + std::to_string(r);
        throw UsageError("--ranks is needed: " + a->op + " was fitted at several rank counts (" + list + ")");
      }
      ranks = fitted.empty() ? 2 : fitted.front();
    }
    auto p = m.predict(a->op, bytes, ranks, a->level, a->dtype);
    std::printf("%s %s on %d ranks (%s, %s): %s  [%s, %s]  busbw %.3f GB/s  (%s view)\n", a->op.c_str(),
                format_bytes(bytes).c_str(), ranks, a->level.c_str(), p.view == "direct" ? p.from->dtype.c_str() : a->dtype.c_str(),
                format_seconds(p.seconds).c_str(), format_seconds(p.lo).c_str(), format_seconds(p.hi).c_str(),
                p.busbw / 1e9, p.view.c_str());
    double lo = p.algorithm_fit ? p.algorithm_fit->ranges.front().lo_bytes : p.from->bytes_min;
    double hi = p.algorithm_fit ? p.algorithm_fit->ranges.back().hi_bytes : p.from->bytes_max;
    if (p.extrapolated_bytes)
      std::printf("EXTRAPOLATION: %s is outside the fitted range %s .. %s\n", format_bytes(bytes).c_str(),
                  format_bytes(lo).c_str(), format_bytes(hi).c_str());
    if (p.extrapolated_ranks) std::printf("EXTRAPOLATION: %s\n", p.note.c_str());
    if (!a->explain) return;
    if (p.view == "algorithm") {
      const auto& af = *p.algorithm_fit;
      std::printf("  view        algorithm: %s, identified for %s at %d ranks (level %s)\n", p.algorithm.c_str(),
                  af.benchmark.c_str(), af.ranks, af.level.c_str());
      std::printf("  link        pingpong fit at %d ranks; gamma %s/byte%s\n", af.link_ranks,
                  format_seconds(af.gamma).c_str(), af.gamma > 0 ? " (reduce_local)" : " (not measured)");
      std::printf("  calibration x%.3f (measured / pt2pt-derived in that size range at %d ranks)\n", p.calibration,
                  af.ranks);
      std::printf("  ranges      ");
      for (const auto& r : af.ranges)
        std::printf("%s..%s %s; ", format_bytes(r.lo_bytes).c_str(), format_bytes(r.hi_bytes).c_str(),
                    r.algorithm.c_str());
      std::printf("\n");
    } else {
      const auto& s = p.from->fit.segments[p.segment];
      std::printf("  view        direct fit of %s at %d ranks, level %s\n", p.from->benchmark.c_str(),
                  p.from->ranks, p.from->level.c_str());
      std::printf("  segment     %zu of %zu: %s .. %s (%zu sizes, R^2 %.4f, rms rel residual %.1f%%)\n",
                  p.segment + 1, p.from->fit.segments.size(), format_bytes(s.lo_bytes).c_str(),
                  format_bytes(s.hi_bytes).c_str(), s.points, s.r2, 100 * s.rms_rel_residual);
      std::printf("  alpha       %s, 95%% CI [%s, %s]; 1/beta %.3f GB/s\n", format_seconds(s.alpha).c_str(),
                  format_seconds(s.alpha_ci.lo).c_str(), format_seconds(s.alpha_ci.hi).c_str(),
                  s.beta > 0 ? 1e-9 / s.beta : 0.0);
    }
    std::printf("  alpha part  %s\n", format_seconds(p.alpha_part).c_str());
    std::printf("  beta part   %s\n", format_seconds(p.beta_part).c_str());
    if (p.view == "algorithm")
      std::printf("  gamma part  %s\n", format_seconds(p.gamma_part).c_str());
    else
      std::printf("  gamma part  0 (in the direct view reduction is part of beta)\n");
  });
}

}  // namespace sextant::cli
