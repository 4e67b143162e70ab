// sextant predict MODEL --op OP --bytes N [--ranks P] [--level L] [--dtype T] [--explain]
//                       --op KERNEL --shape DIMS | --train CONFIG [--search N] [--json FILE]
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <limits>
#include <set>
#include <nlohmann/json.hpp>

#include "core/replace_file.hpp"
#include "core/units.hpp"
#include "core/version.hpp"
#include "kernels/registry.hpp"
#include "models/comm_model.hpp"
#include "models/compute_model.hpp"
#include "models/json.hpp"
#include "models/layout_search.hpp"
#include "models/model_file.hpp"
#include "models/step_predictor.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {

namespace {

using Json = nlohmann::json;

struct PredictArgs {
  std::string model, op, bytes, level = "world", dtype = "float32", shape, train, json, memory;
  model::LevelMap levels;
  int ranks = 0, search = 0, top = 10, ranks_per_node = 0;
  bool ranks_given = false;
  bool explain = false;
};

// Every --json document: what it is, which version of its layout, and what it came from.
Json document(const std::string& kind, const std::string& model_path) {
  return Json{{"schema", "sextant.prediction"}, {"schema_version", 1}, {"kind", kind}, {"model_file", model_path},
              {"sextant_version", SEXTANT_VERSION}};
}

Json predict_train(const std::string& path, const std::string& text, model::LevelMap levels, int ranks_per_node) {
  auto config = model::parse_train_config(text);  // usage errors before any file is read
  const auto file = model::read_model_file(path);
  const auto& compute = model::compute_part(file, path);
  const auto comm = file.comm.value_or(model::CommModel{});  // none for one rank
  model::choose_dense_path(config, text, compute);
  auto plan = model::plan_step(config);
  std::vector<std::string> placement_notes;
  if (ranks_per_node > 0) levels = model::placed_levels(config, ranks_per_node, comm, &placement_notes);
  auto p = model::predict_step(plan, comm, compute, levels, file.sync ? &*file.sync : nullptr);
  p.notes.insert(p.notes.end(), placement_notes.begin(), placement_notes.end());
  std::printf("training step: %d layers, hidden %d, heads %d, seq %d, micro-batch %d, global batch %d\n",
              config.layers, config.hidden, config.heads, config.seq, config.micro_batch, config.global_batch);
  std::string extra = config.staleness > 0 ? ", DP stale by " + std::to_string(config.staleness) : "";
  if (config.experts > 0)
    extra += ", " + std::to_string(config.experts) + " experts top-" + std::to_string(config.top_k) + " over EP " +
             std::to_string(config.ep);
  if (config.mixed()) extra += ", mixed precision (" + config.master_dtype() + " master)";
  std::printf("parallelism:   %d ranks = DP %d x TP %d x PP %d, %s, %d micro-batches%s%s%s (levels tp=%s dp=%s pp=%s)\n",
              config.ranks(), config.dp, config.tp, config.pp,
              config.schedule == model::Schedule::gpipe ? "GPipe" : "1F1B", p.micro_batches,
              config.zero == 3 ? ", ZeRO-3" : config.zero == 1 ? ", ZeRO-1" : "", config.overlap_dp ? ", DP overlapped" : "",
              extra.c_str(), levels.tp.c_str(),
              levels.dp.c_str(), levels.pp.c_str());
  std::printf("dense path:    %s GEMMs\n", model::to_string(config.dense));
  std::printf("predicted step time %s\n", format_seconds(p.total).c_str());
  for (const auto& [name, t] : p.breakdown)
    std::printf("  %-28s %12s  %5.1f%%\n", name.c_str(), format_seconds(t).c_str(), p.total > 0 ? 100 * t / p.total : 0.0);
  std::printf("  %-28s %12s  (sum of the above)\n", "total", format_seconds(p.total).c_str());
  std::printf("pipeline bubble fraction (S-1)/(M+S-1) = %.3f; critical stage %d\n", p.bubble_fraction, p.critical_stage);
  for (const auto& n : p.notes) std::printf("note: %s\n", n.c_str());
  Json doc = document("train", path);
  doc["config"] = config;
  doc["levels"] = levels;
  doc["prediction"] = p;
  return doc;
}

// --search N: every layout of the --train model on N ranks, fastest first.
Json search_train(const std::string& path, const std::string& text, int ranks, int top, double memory_limit,
                  const model::LevelMap& levels, int ranks_per_node) {
  for (const char* key : {"dp=", "tp=", "pp=", "micro_batch=", "schedule=", "sp=", "ep="})
    if (text.find(key) != std::string::npos)
      throw UsageError(std::string("--search chooses dp, tp, pp, micro_batch, schedule, sp and ep: leave ") +
                       std::string(key).substr(0, std::string(key).size() - 1) + " out of --train");
  auto base = model::parse_train_config(text + (text.empty() ? "" : ",") + "micro_batch=1");
  const auto file = model::read_model_file(path);
  const auto& compute = model::compute_part(file, path);
  const auto comm = file.comm.value_or(model::CommModel{});  // none for one rank
  model::choose_dense_path(base, text, compute);
  const auto t0 = std::chrono::steady_clock::now();
  auto found = model::search_layouts(base, ranks, comm, compute, levels, memory_limit, ranks_per_node,
                                     file.sync ? &*file.sync : nullptr);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("layout search: %d ranks, %d layers, hidden %d, heads %d, seq %d, vocab %d, global batch %d, %s GEMMs\n",
              ranks, base.layers, base.hidden, base.heads, base.seq, base.vocab, base.global_batch,
              model::to_string(base.dense));
  const std::string where = ranks_per_node > 0 ? std::to_string(ranks_per_node) + " ranks per node, each group on "
                                                   "the level it crosses"
                                                 : "levels tp=" + levels.tp + " dp=" + levels.dp + " pp=" + levels.pp;
  std::printf("%lld candidates, %zu valid layouts%s, searched in %.2f s (%s)\n", found.candidates,
              found.layouts.size() + static_cast<std::size_t>(found.over_memory),
              found.over_memory ? (", " + std::to_string(found.over_memory) + " over the memory limit").c_str() : "",
              took, where.c_str());
  if (found.layouts.empty()) throw Error("no layout of this model fits " + std::to_string(ranks) + " ranks" +
                                         (found.over_memory ? " within the memory limit" : ""));
  const bool moe = base.experts > 0;  // an ep column, and its all-to-alls
  const auto column = [](const std::string& text, std::size_t width) {  // " " and right-aligned
    return " " + std::string(width - std::min(width, text.size()), ' ') + text;
  };
  std::printf("%4s %6s %4s %3s %4s %5s %6s %-8s%s %12s %9s %9s %9s %9s %9s%s %11s\n", "rank", "dp", "tp", "sp", "pp", "mb", "M",
              "schedule", moe ? "     ep" : "", "step", "compute", "tp comm", "pp comm", "bubble", "dp exp.",
              moe ? "   ep comm" : "", "memory/rank");
  Json doc = document("layout_search", path);
  doc["ranks"] = ranks;
  doc["candidates"] = found.candidates;
  doc["over_memory"] = found.over_memory;
  doc["search_seconds"] = took;
  if (ranks_per_node > 0) doc["ranks_per_node"] = ranks_per_node;
  else doc["levels"] = levels;
  if (memory_limit > 0) doc["memory_limit_bytes"] = memory_limit;
  doc["layouts"] = Json::array();
  const int shown = std::min<int>(top, static_cast<int>(found.layouts.size()));
  for (int i = 0; i < static_cast<int>(found.layouts.size()); ++i) {
    const auto& r = found.layouts[i];
    const auto& c = r.config;
    auto part = [&](const char* name) {
      for (const auto& [n, t] : r.prediction.breakdown)
        if (n == name) return t;
      return 0.0;
    };
    if (i < shown)
      std::printf("%4d %6d %4d %3s %4d %5d %6d %-8s%s %12s %9s %9s %9s %9s %9s%s %11s\n", i + 1, c.dp, c.tp, c.sp ? "yes" : "-", c.pp,
                  c.micro_batch, c.micro_batches(), model::schedule_name(c.schedule),
                  moe ? column(std::to_string(c.ep), 6).c_str() : "",
                  format_seconds(r.prediction.total).c_str(),
                  format_seconds(part("forward compute") + part("backward compute") + part("optimizer")).c_str(),
                  format_seconds(part("tp communication")).c_str(), format_seconds(part("pp communication")).c_str(),
                  format_seconds(part("pipeline bubble")).c_str(),
                  format_seconds(part("dp communication (exposed)")).c_str(),
                  moe ? column(format_seconds(part("ep communication")), 9).c_str() : "",
                  format_bytes(r.memory_bytes).c_str());
    doc["layouts"].push_back(r);
  }
  std::printf("memory/rank: the largest stage's step working set (parameters, gradients and optimizer state plus "
              "the forward traffic of the micro-batches in flight, which 1F1B keeps fewer of than GPipe): an upper "
              "bound of the memory a rank needs\n");
  std::set<std::string> notes;
  for (const auto& r : found.layouts)
    for (const auto& n : r.prediction.notes) notes.insert(n);
  if (!notes.empty()) std::printf("notes (%zu distinct over all layouts; see --json): %s\n", notes.size(), notes.begin()->c_str());
  return doc;
}

// --op KERNEL --shape M,N,K (positional, in the kernel's parameter order) or M=..,N=..
Json predict_operator(const std::string& path, const std::string& op, const std::string& shape_text,
                      const std::string& dtype_text) {
  const auto file = model::read_model_file(path);
  const auto& compute = model::compute_part(file, path);
  const kernels::KernelInfo* k = kernels::find_kernel(op);
  if (!k) throw UsageError("--op '" + op + "' is neither a kernel nor a benchmark (see sextant run --suite compute)");
  auto dtype = kernels::parse_dtype(dtype_text);
  if (!dtype) throw UsageError("--dtype '" + dtype_text + "' (use float64 or float32)");
  kernels::Shape shape;
  auto items = split_list(shape_text);
  for (std::size_t i = 0; i < k->params.size(); ++i) {
    std::int64_t v = 0;
    if (i < items.size()) {
      std::string item = items[i];
      auto eq = item.find('=');
      try {
        v = std::stoll(eq == std::string::npos ? item : item.substr(eq + 1));
      } catch (const std::exception&) {
        throw UsageError("--shape '" + shape_text + "': '" + item + "' is not a number");
      }
    } else if (items.size() < k->params.size() && (k->params[i] == "ta" || k->params[i] == "tb")) {
      v = 0;  // no transpose unless said
    } else {
      std::string names;
      for (const auto& p : k->params) names += (names.empty() ? "" : ",") + p;
      throw UsageError("--shape '" + shape_text + "': " + op + " takes " + names);
    }
    const bool flag = k->params[i] == "ta" || k->params[i] == "tb";
    if (flag ? (v != 0 && v != 1) : v <= 0)
      throw UsageError("--shape '" + shape_text + "': " + k->params[i] + "=" + std::to_string(v) +
                       (flag ? " (0 or 1)" : " (must be >= 1)"));
    shape.dims.emplace_back(k->params[i], v);
  }
  double flops = k->flops(shape, *dtype), bytes = k->bytes(shape, *dtype);
  std::string dt(kernels::to_string(*dtype));
  auto e = compute.predict(op, dt, flops, bytes, k->family, shape.str());
  std::printf("%s %s (%s): %s  (%s-bound, %.3g GFLOP, %s moved)\n", op.c_str(), shape.str().c_str(), dt.c_str(),
              format_seconds(e.seconds).c_str(), e.bound.c_str(), flops / 1e9, format_bytes(bytes).c_str());
  // Beyond the shapes the model was fitted on: said, as for message sizes.
  double lo_flops = 0, hi_flops = 0;
  for (const auto& p : compute.points)
    if (p.kernel == op && p.dtype == dt) {
      lo_flops = lo_flops == 0 ? p.flops : std::min(lo_flops, p.flops);
      hi_flops = std::max(hi_flops, p.flops);
    }
  const bool extrapolated = hi_flops > 0 && (flops > 2 * hi_flops || flops < lo_flops / 2);
  Json doc = document("operator", path);
  doc["operator"] = op;
  doc["shape"] = shape.str();
  doc["dtype"] = dt;
  doc["flops"] = flops;
  doc["bytes"] = bytes;
  doc["seconds"] = e.seconds;
  doc["bound"] = e.bound;
  doc["operator_model"] = e.model;
  doc["calibrated"] = e.calibrated;
  doc["extrapolated"] = extrapolated;
  if (extrapolated)
    std::printf("EXTRAPOLATION: %.3g GFLOP is outside the measured shapes' %.3g .. %.3g GFLOP\n", flops / 1e9,
                lo_flops / 1e9, hi_flops / 1e9);
  if (e.model == "measured") {
    std::printf("  measured at this shape: the results' median (no model needed)\n");
  } else if (const auto* m = e.calibrated ? compute.find(e.model, dt) : nullptr) {
    std::printf("  operator model %s: e_compute %.3f, e_memory %.3f, t0 %s, median error %.1f%% over %zu shapes\n",
                e.model.c_str(), m->e_compute, m->e_memory, format_seconds(m->t0).c_str(), 100 * m->median_rel_error,
                m->shapes);
  } else {
    std::printf("  no operator model for %s: roofline bound only (efficiency 1)\n", op.c_str());
  }
  return doc;
}

// --op BENCHMARK --bytes N: a collective or point-to-point time.
Json predict_comm(const PredictArgs& a) {
  const auto file = model::read_model_file(a.model);
  const auto& m = model::comm_part(file, a.model);
  if (a.op.empty()) {
    if (!a.bytes.empty() || a.ranks_given) throw UsageError("--bytes and --ranks need --op (the benchmark to predict)");
    Json doc = document("comm_fits", a.model);
    doc["fits"] = Json::array();
    std::cout << a.model << ": " << m.fits.size() << " communication fits (use --op and --bytes):\n";
    for (const auto& f : m.fits) {
      std::cout << "  " << f.benchmark << "  level=" << f.level << "  dtype=" << f.dtype << "  ranks=" << f.ranks
                << "  bytes " << format_bytes(f.bytes_min) << " .. " << format_bytes(f.bytes_max) << "\n";
      doc["fits"].push_back({{"benchmark", f.benchmark}, {"level", f.level}, {"dtype", f.dtype}, {"ranks", f.ranks},
                             {"bytes_min", f.bytes_min}, {"bytes_max", f.bytes_max}});
    }
    return doc;
  }
  if (a.bytes.empty()) throw UsageError("--bytes is required with --op");
  double bytes = static_cast<double>(parse_bytes(a.bytes));
  int ranks = a.ranks;
  // Every benchmark is measured on 2 ranks or more; one rank has no communication to predict.
  if (a.ranks_given && ranks < 2) throw UsageError("--ranks " + std::to_string(ranks) + ": must be >= 2");
  if (ranks == 0) {
    auto fitted = m.fitted_ranks(a.op, a.level, a.dtype);
    if (fitted.size() > 1) {
      std::string list;
      for (int r : fitted) list += (list.empty() ? "" : ", ") + std::to_string(r);
      throw UsageError("--ranks is needed: " + a.op + " was fitted at several rank counts (" + list + ")");
    }
    ranks = fitted.empty() ? 2 : fitted.front();
  }
  auto p = m.predict(a.op, bytes, ranks, a.level, a.dtype);
  std::printf("%s %s on %d ranks (%s, %s): %s  [%s, %s]  busbw %.3f GB/s  (%s view)\n", a.op.c_str(),
              format_bytes(bytes).c_str(), ranks, a.level.c_str(), p.view == model::View::direct ? p.from->dtype.c_str() : a.dtype.c_str(),
              format_seconds(p.seconds).c_str(), format_seconds(p.lo).c_str(), format_seconds(p.hi).c_str(),
              p.busbw / 1e9, to_string(p.view));
  double lo = p.algorithm_fit ? p.algorithm_fit->ranges.front().lo_bytes : p.from->bytes_min;
  double hi = p.algorithm_fit ? p.algorithm_fit->ranges.back().hi_bytes : p.from->bytes_max;
  if (p.extrapolated_bytes)
    std::printf("EXTRAPOLATION: %s is outside the fitted range %s .. %s\n", format_bytes(bytes).c_str(),
                format_bytes(lo).c_str(), format_bytes(hi).c_str());
  if (p.extrapolated_ranks) std::printf("EXTRAPOLATION: %s\n", p.note.c_str());
  Json doc = document("comm", a.model);
  doc.update(Json(p));
  doc["operation"] = a.op;
  doc["bytes"] = bytes;
  doc["ranks"] = ranks;
  doc["level"] = a.level;
  doc["dtype"] = p.view == model::View::direct ? p.from->dtype : a.dtype;
  if (!a.explain) return doc;
  if (p.view == model::View::algorithm) {
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
    if (p.bridged)
      std::printf("  gap         between two fitted ranges: time interpolated between their ends (geometrically)\n");
    std::printf("  alpha       %s, 95%% CI [%s, %s]; 1/beta %.3f GB/s\n", format_seconds(s.alpha).c_str(),
                format_seconds(s.alpha_ci.lo).c_str(), format_seconds(s.alpha_ci.hi).c_str(),
                s.beta > 0 ? 1e-9 / s.beta : std::numeric_limits<double>::infinity());
  }
  std::printf("  alpha part  %s\n", format_seconds(p.alpha_part).c_str());
  std::printf("  beta part   %s\n", format_seconds(p.beta_part).c_str());
  if (p.view == model::View::algorithm)
    std::printf("  gamma part  %s\n", format_seconds(p.gamma_part).c_str());
  else
    std::printf("  gamma part  0 (in the direct view reduction is part of beta)\n");
  return doc;
}

}  // namespace

void register_predict(CLI::App& app, Context&) {
  auto a = std::make_shared<PredictArgs>();
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
  cmd->add_option("--shape", a->shape, "compute operator shape, e.g. 512,512,512 or M=512,N=512,K=512");
  cmd->add_option("--train", a->train,
                  "a training step: layers=..,hidden=..,heads=..,seq=..,micro_batch=..,global_batch=..,dp=..,tp=..,pp=..");
  cmd->add_option("--tp-level", a->levels.tp, "comm level of tensor-parallel traffic (world, intra, inter)");
  cmd->add_option("--dp-level", a->levels.dp, "comm level of data-parallel traffic (and of the experts' all-to-alls, "
                                              "which run on the dp group)");
  cmd->add_option("--pp-level", a->levels.pp, "comm level of pipeline traffic");
  cmd->add_option("--ranks-per-node", a->ranks_per_node,
                  "with --train: place the layout (TP ranks consecutive, then DP, then PP) and cost each group on "
                  "the level it crosses (intra inside a node, inter across)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--search", a->search,
                  "with --train: rank every (dp, tp, pp, micro-batch, schedule) layout of this many ranks by "
                  "predicted step time")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--top", a->top, "--search: layouts printed (default 10; --json has all)")->check(CLI::PositiveNumber);
  cmd->add_option("--memory-per-rank", a->memory, "--search: leave out layouts needing more (K/M/G suffixes)");
  cmd->add_option("--json", a->json, "also write the prediction as JSON to this file ('-' for standard output)");
  cmd->callback([a] {
    // Checked before anything is computed: a path that cannot be written is an error.
    if (!a->json.empty() && a->json != "-") FileReplacement probe(a->json);  // removed uncommitted
    // --json -: the document alone on standard output, the text on standard error.
    int json_fd = -1;
    if (a->json == "-") {
      std::fflush(stdout);
      json_fd = ::dup(STDOUT_FILENO);
      ::dup2(STDERR_FILENO, STDOUT_FILENO);
    }
    Json doc;
    a->levels.ep = a->levels.dp;
    if (!a->train.empty()) {
      if (a->ranks_given || !a->bytes.empty() || !a->shape.empty() || !a->op.empty())
        throw UsageError("--train takes its layout (dp, tp, pp) from the configuration: not with --op, --bytes, "
                         "--shape or --ranks");
      if (a->ranks_per_node > 0 && (a->levels.tp != "world" || a->levels.dp != "world" || a->levels.pp != "world"))
        throw UsageError("--ranks-per-node places every group itself: not with --tp-level, --dp-level or --pp-level");
      if (a->search > 0) {
        double memory = a->memory.empty() ? 0 : static_cast<double>(parse_bytes(a->memory));
        if (!a->memory.empty() && !(memory > 0)) throw UsageError("--memory-per-rank '" + a->memory + "': must be > 0");
        doc = search_train(a->model, a->train, a->search, a->top, memory, a->levels, a->ranks_per_node);
      } else {
        doc = predict_train(a->model, a->train, a->levels, a->ranks_per_node);
      }
    } else if (a->search > 0 || !a->memory.empty() || a->ranks_per_node > 0) {
      throw UsageError("--search, --memory-per-rank and --ranks-per-node need --train (the model to lay out)");
    } else if (!a->shape.empty()) {
      doc = predict_operator(a->model, a->op, a->shape, a->dtype);
    } else {
      doc = predict_comm(*a);
    }
    if (json_fd >= 0) {
      std::fflush(stdout);
      const std::string text = doc.dump(1) + "\n";
      FILE* out = ::fdopen(json_fd, "w");
      if (!out || std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fclose(out) != 0)
        throw Error(std::string("--json -: cannot write to standard output (") + std::strerror(errno) + ")");
    } else if (!a->json.empty()) {
      replace_file_contents(a->json, doc.dump(1) + "\n");
    }
  });
}

}  // namespace sextant::cli
