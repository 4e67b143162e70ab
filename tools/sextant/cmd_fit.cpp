// sextant fit RESULTS [-o MODEL] [--json FILE]: fit models to a results file.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "core/replace_file.hpp"
#include "core/units.hpp"
#include "core/schema.hpp"
#include "core/stats.hpp"
#include "models/comm_model.hpp"
#include "models/compute_model.hpp"
#include "models/model_file.hpp"
#include "suites/common/runtime.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {

std::string default_model_path(const std::string& results) {
  auto dot = results.rfind(".h5");
  return (dot == std::string::npos ? results : results.substr(0, dot)) + ".model.h5";
}

namespace {

using Json = nlohmann::json;

// What a fit found, as JSON (`fit --json`, docs/file-formats.md): the fitted parameters
// the model file holds, without the model file's provenance (it names the results).
Json to_json(const model::CommModel& m) {
  Json fits = Json::array(), algorithms = Json::array(), loggp = Json::array();
  for (const auto& f : m.fits) {
    Json segments = Json::array();
    for (const auto& s : f.fit.segments)
      segments.push_back({{"lo_bytes", s.lo_bytes}, {"hi_bytes", s.hi_bytes}, {"alpha_s", s.alpha},
                          {"beta_s_per_byte", s.beta}, {"alpha_ci_s", {s.alpha_ci.lo, s.alpha_ci.hi}},
                          {"beta_ci_s_per_byte", {s.beta_ci.lo, s.beta_ci.hi}}, {"r2", s.r2},
                          {"rms_rel_residual", s.rms_rel_residual}, {"points", s.points}});
    fits.push_back({{"benchmark", f.benchmark}, {"level", f.level}, {"dtype", f.dtype}, {"ranks", f.ranks},
                    {"size_unit", to_string(f.size_unit)}, {"busbw_factor", f.busbw_factor},
                    {"oversubscribed", f.oversubscribed}, {"segments", std::move(segments)}});
  }
  for (const auto& a : m.algorithms) {
    Json ranges = Json::array();
    for (const auto& r : a.ranges)
      ranges.push_back({{"lo_bytes", r.lo_bytes}, {"hi_bytes", r.hi_bytes}, {"algorithm", r.algorithm},
                        {"calibration", r.calibration}, {"median_abs_error", r.median_abs_error},
                        {"indistinguishable", r.indistinguishable}});
    algorithms.push_back({{"benchmark", a.benchmark}, {"level", a.level}, {"dtype", a.dtype}, {"ranks", a.ranks},
                          {"gamma_s_per_byte", a.gamma}, {"link_ranks", a.link_ranks}, {"ranges", std::move(ranges)}});
  }
  for (const auto& l : m.loggp)
    loggp.push_back({{"level", l.level}, {"ranks", l.ranks}, {"L_plus_2o_s", l.L_plus_2o}, {"g_s", l.g},
                     {"G_s_per_byte", l.G}});
  return {{"fits", std::move(fits)}, {"algorithms", std::move(algorithms)}, {"loggp", std::move(loggp)}};
}

Json to_json(const model::ComputeModel& m) {
  Json memory = Json::array(), operators = Json::array();
  for (const auto& l : m.ceilings.memory)
    memory.push_back({{"level", l.name}, {"lo_bytes", l.lo_bytes}, {"hi_bytes", l.hi_bytes},
                      {"bandwidth_Bps", l.bandwidth}});
  for (const auto& o : m.operators)
    operators.push_back({{"operator", o.family}, {"dtype", o.dtype}, {"e_compute", o.e_compute},
                         {"e_memory", o.e_memory}, {"t0_s", o.t0}, {"median_rel_error", o.median_rel_error},
                         {"shapes", o.shapes}});
  return {{"threads", m.threads}, {"peak_flops", m.ceilings.peak_flops}, {"peak_shape", m.peak_shape},
          {"memory", std::move(memory)}, {"operators", std::move(operators)}, {"raised", m.raised},
          {"violations", m.violations}};
}

Json print_holdout(const std::string& results) {
  auto rows = model::holdout_check(results);
  Json out = Json::array();
  std::printf("held-out check: fit on every other size (and the largest), mean absolute %% error on the others\n");
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
    Json row{{"benchmark", r.benchmark}, {"level", r.level}, {"dtype", r.dtype}, {"ranks", r.ranks},
             {"held_out_below_64KiB", r.small_n}, {"held_out_from_64KiB", r.large_n}};
    if (r.small_n) row["mape_below_64KiB_percent"] = r.small_mape;
    if (r.large_n) row["mape_from_64KiB_percent"] = r.large_mape;
    out.push_back(std::move(row));
  }
  auto med = [](const std::vector<double>& v) { return v.empty() ? 0.0 : stats::median(v); };
  auto worst = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
  std::printf("over benchmarks: <64KiB median %.1f%% max %.1f%%   >=64KiB median %.1f%% max %.1f%%\n", med(small),
              worst(small), med(large), worst(large));
  return out;
}
void print_comm_fits(const model::CommModel& model) {
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
}

Json print_operator_holdout(const std::string& results) {
  auto rows = model::operator_holdout(results);
  Json out = Json::array();
  std::printf("held-out check of the operator models: fit on every other shape, error on the others\n");
  std::printf("%-28s %-8s %7s %9s %12s %10s\n", "operator", "dtype", "fitted", "held-out", "median err", "max err");
  std::vector<double> medians;
  for (const auto& r : rows) {
    std::printf("%-28s %-8s %7zu %9zu %11.1f%% %9.1f%%\n", r.op.c_str(), r.dtype.c_str(), r.fitted, r.held_out,
                100 * r.median_abs_error, 100 * r.max_abs_error);
    medians.push_back(r.median_abs_error);
    out.push_back({{"operator", r.op}, {"dtype", r.dtype}, {"fitted", r.fitted}, {"held_out", r.held_out},
                   {"median_abs_error", r.median_abs_error}, {"max_abs_error", r.max_abs_error}});
  }
  std::sort(medians.begin(), medians.end());
  if (!medians.empty())
    std::printf("over operators: median of the median errors %.1f%%, worst %.1f%%\n",
                100 * medians[medians.size() / 2], 100 * medians.back());
  else
    std::printf("no operator has 4 or more shapes: measure with --full-shapes (or the train suite)\n");
  return out;
}

void print_compute_fits(const model::ComputeModel& m) {
  std::printf("compute ceilings (%d threads per rank):", m.threads);
  for (const auto& [dtype, p] : m.ceilings.peak_flops) std::printf("  %s %.2f GFLOP/s", dtype.c_str(), p / 1e9);
  std::printf("\n");
  for (const auto& [dtype, shape] : m.peak_shape) std::printf("  peak_fma %s: best at %s\n", dtype.c_str(), shape.c_str());
  for (const auto& l : m.ceilings.memory)
    std::printf("  memory %-8s %10s .. %-10s %8.2f GB/s\n", l.name.c_str(), format_bytes(l.lo_bytes).c_str(),
                format_bytes(l.hi_bytes).c_str(), l.bandwidth / 1e9);
  std::printf("%-16s %-8s %7s %10s %10s %10s %12s\n", "operator", "dtype", "shapes", "e_compute", "e_memory",
              "t0(us)", "median err");
  for (const auto& o : m.operators)
    std::printf("%-16s %-8s %7zu %10.3f %10.3f %10.2f %11.1f%%\n", o.family.c_str(), o.dtype.c_str(), o.shapes,
                o.e_compute, o.e_memory, o.t0 * 1e6, 100 * o.median_rel_error);
  if (m.operators.empty())
    std::printf("(none: no kernel was measured at enough shapes; predictions use the roofline bound)\n");
}

}  // namespace

void register_fit(CLI::App& app, Context& ctx) {
  auto results = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto holdout = std::make_shared<bool>(false);
  auto strict = std::make_shared<bool>(false);
  auto json = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("fit", "Fit models to a results file and write a model file");
  cmd->add_option("results", *results, "results file (sextant.results)")->required();
  cmd->add_option("-o,--output", *output, "model file (default RESULTS with .model.h5)");
  cmd->add_flag("--holdout", *holdout,
                "check instead of writing: fit every other size, report the error on the sizes left out");
  cmd->add_flag("--strict", *strict,
                "a kernel measured faster than a ceiling is an error (exit 1, no model written) instead of "
                "raising the ceiling to its rate with a warning");
  cmd->add_option("--json", *json, "also write what was fitted as JSON to this file");
  cmd->callback([&ctx, results, output, holdout, strict, json] {
    if (!json->empty()) FileReplacement probe(*json);  // writable? checked before fitting
    if (*holdout) {
      h5::File f = open_checked(*results, results_schema);
      bool comm = f.has("comm"), compute = f.has("compute");
      Json doc{{"schema", "sextant.holdout"}, {"schema_version", 1}, {"results_file", *results}};
      if (comm) doc["comm"] = print_holdout(*results);
      if (compute) doc["compute"] = print_operator_holdout(*results);
      if (!json->empty()) replace_file_contents(*json, doc.dump(1) + "\n");
      return;
    }
    std::string out = output->empty() ? default_model_path(*results) : *output;
    if (same_file(*results, out)) throw UsageError("-o " + out + ": is the results file; the model goes to a file of its own");
    Provenance source;
    bool has_comm = false, has_compute = false;
    std::set<std::string> measured;  // benchmarks and kernels the file holds
    {
      h5::File f = open_checked(*results, results_schema);
      source = read_provenance(f.group("meta"));
      has_comm = f.has("comm");
      has_compute = f.has("compute");
      if (has_comm) for_each_rank_group(f, "comm", [&](const RankGroup& g) { measured.insert(g.benchmark); });
      if (has_compute && f.group("compute").has("kernels"))
        for (const auto& k : f.group("compute").group("kernels").children()) measured.insert(k);
    }
    if (!has_comm && !has_compute) throw Error(*results + ": no /comm or /compute results to fit");
    // A run that was interrupted left `complete` at "no": fit what finished, and say so
    // (here, and in the model's /source, which copies the results' /meta).
    if (auto c = source.fields.find("complete"); c != source.fields.end() && c->second != "yes") {
      std::string names;
      for (const auto& m : measured) names += (names.empty() ? "" : ", ") + m;
      std::cout << "WARNING: " << *results << " is from a run that did not finish (meta complete = " << c->second
                << "): fitting the " << measured.size() << " benchmarks it holds: " << names << "\n";
      std::cerr << "sextant: WARNING: " << *results << " is from an interrupted run; the model covers only what "
                << "finished (listed above)\n";
    }
    const model::ModelFile model = model::fit_model_file(*results);
    const auto& comm = model.comm;
    const auto& compute = model.compute;
    if (comm) print_comm_fits(*comm);
    if (compute) {
      if (*strict && !compute->violations.empty()) {
        for (const auto& v : compute->violations) std::cerr << "sextant: ERROR: measured faster than a ceiling: " << v << "\n";
        throw Error(*results + ": " + std::to_string(compute->violations.size()) +
                    " measurement(s) faster than a measured ceiling (--strict): the ceiling kernels missed this "
                    "host's peak; no model written");
      }
      print_compute_fits(*compute);
    }
    model::write_model_file(out, local_provenance(ctx.argc, ctx.argv), model);
    std::cerr << "sextant: wrote " << out << "\n";
    if (!json->empty()) {
      Json doc{{"schema", "sextant.fit"}, {"schema_version", 1}, {"results_file", *results}, {"model_file", out}};
      if (comm) doc["comm"] = to_json(*comm);
      if (compute) doc["compute"] = to_json(*compute);
      replace_file_contents(*json, doc.dump(1) + "\n");
    }
    if (compute)
      for (const auto& r : compute->raised)
        std::cerr << "sextant: WARNING: a kernel beat a measured ceiling, raised to its rate (flagged in the model): "
                  << r << "\n";
  });
}

}  // namespace sextant::cli
