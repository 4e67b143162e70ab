// sextant predict MODEL --op OP --bytes N [--ranks P] [--level L] [--dtype T] [--explain]
#include <algorithm>
#include <iostream>
#include <limits>

#include "core/units.hpp"
#include "kernels/registry.hpp"
#include "models/comm_model.hpp"
#include "models/compute_model.hpp"
#include "models/step_predictor.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {

namespace {

// "layers=24,hidden=2048,...,dp=64,tp=8,pp=1,schedule=1f1b,zero1=1,overlap=1".
model::TrainConfig parse_train_config(const std::string& text) {
  model::TrainConfig c;
  for (const auto& item : split_list(text)) {
    auto eq = item.find('=');
    if (eq == std::string::npos) throw UsageError("--train: '" + item + "' is not key=value");
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    auto number = [&] {
      try {
        std::size_t used = 0;
        double v = std::stod(value, &used);
        if (used != value.size()) throw std::invalid_argument(value);
        return v;
      } catch (const std::exception&) {
        throw UsageError("--train: " + key + "='" + value + "' is not a number");
      }
    };
    auto integer = [&] { return static_cast<int>(number()); };
    if (key == "layers") c.layers = integer();
    else if (key == "hidden") c.hidden = integer();
    else if (key == "heads") c.heads = integer();
    else if (key == "seq") c.seq = integer();
    else if (key == "vocab") c.vocab = integer();
    else if (key == "micro_batch") c.micro_batch = integer();
    else if (key == "global_batch") c.global_batch = integer();
    else if (key == "dp") c.dp = integer();
    else if (key == "tp") c.tp = integer();
    else if (key == "pp") c.pp = integer();
    else if (key == "bucket_bytes") c.bucket_bytes = number();
    else if (key == "zero1") c.zero1 = integer() != 0;
    else if (key == "overlap") c.overlap_dp = integer() != 0;
    else if (key == "dtype") c.dtype = value;
    else if (key == "dense") c.dense = model::parse_dense_path(value);
    else if (key == "schedule") {
      if (value == "gpipe") c.schedule = model::Schedule::gpipe;
      else if (value == "1f1b") c.schedule = model::Schedule::one_f_one_b;
      else throw UsageError("--train: schedule='" + value + "' (use gpipe or 1f1b)");
    } else if (key == "optimizer") {
      if (value == "sgd") c.optimizer = model::Optimizer::sgd;
      else if (value == "adamw") c.optimizer = model::Optimizer::adamw;
      else throw UsageError("--train: optimizer='" + value + "' (use sgd or adamw)");
    } else {
      throw UsageError("--train: unknown key '" + key +
                       "' (layers, hidden, heads, seq, vocab, micro_batch, global_batch, dp, tp, pp, schedule, "
                       "optimizer, zero1, overlap, bucket_bytes, dtype, dense)");
    }
  }
  c.validate();
  return c;
}

void predict_train(const std::string& path, const std::string& text, const model::LevelMap& levels) {
  auto comm = model::CommModel::read(path);
  auto compute = model::ComputeModel::read(path);
  if (!compute) throw Error(path + ": no compute part (fit a results file of the compute or train suite)");
  auto config = parse_train_config(text);
  // Unless the configuration names its dense path: the one the model's operators
  // were measured on (the train suite measures the path its proxy runs).
  if (text.find("dense=") == std::string::npos)
    for (const auto& o : compute->operators)
      if (o.family == "vendor_gemm") config.dense = model::DensePath::vendor;
  auto plan = model::plan_step(config);
  auto p = model::predict_step(plan, comm, *compute, levels);
  std::printf("training step: %d layers, hidden %d, heads %d, seq %d, micro-batch %d, global batch %d\n",
              config.layers, config.hidden, config.heads, config.seq, config.micro_batch, config.global_batch);
  std::printf("parallelism:   %d ranks = DP %d x TP %d x PP %d, %s, %d micro-batches%s%s (levels tp=%s dp=%s pp=%s)\n",
              config.ranks(), config.dp, config.tp, config.pp,
              config.schedule == model::Schedule::gpipe ? "GPipe" : "1F1B", p.micro_batches,
              config.zero1 ? ", ZeRO-1" : "", config.overlap_dp ? ", DP overlapped" : "", levels.tp.c_str(),
              levels.dp.c_str(), levels.pp.c_str());
  std::printf("dense path:    %s GEMMs\n", model::to_string(config.dense));
  std::printf("predicted step time %s\n", format_seconds(p.total).c_str());
  for (const auto& [name, t] : p.breakdown)
    std::printf("  %-28s %12s  %5.1f%%\n", name.c_str(), format_seconds(t).c_str(), p.total > 0 ? 100 * t / p.total : 0.0);
  std::printf("  %-28s %12s  (sum of the above)\n", "total", format_seconds(p.total).c_str());
  std::printf("pipeline bubble fraction (S-1)/(M+S-1) = %.3f; critical stage %d\n", p.bubble_fraction, p.critical_stage);
  for (const auto& n : p.notes) std::printf("note: %s\n", n.c_str());
}

// --op KERNEL --shape M,N,K (positional, in the kernel's parameter order) or M=..,N=..
void predict_operator(const std::string& path, const std::string& op, const std::string& shape_text,
                      const std::string& dtype_text) {
  auto compute = model::ComputeModel::read(path);
  if (!compute) throw Error(path + ": no compute part (fit a results file of the compute suite)");
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
  auto e = compute->predict(op, dt, flops, bytes, k->family, shape.str());
  std::printf("%s %s (%s): %s  (%s-bound, %.3g GFLOP, %s moved)\n", op.c_str(), shape.str().c_str(), dt.c_str(),
              format_seconds(e.seconds).c_str(), e.bound.c_str(), flops / 1e9, format_bytes(bytes).c_str());
  // Beyond the shapes the model was fitted on: said, as for message sizes.
  double lo_flops = 0, hi_flops = 0;
  for (const auto& p : compute->points)
    if (p.kernel == op && p.dtype == dt) {
      lo_flops = lo_flops == 0 ? p.flops : std::min(lo_flops, p.flops);
      hi_flops = std::max(hi_flops, p.flops);
    }
  if (hi_flops > 0 && (flops > 2 * hi_flops || flops < lo_flops / 2))
    std::printf("EXTRAPOLATION: %.3g GFLOP is outside the measured shapes' %.3g .. %.3g GFLOP\n", flops / 1e9,
                lo_flops / 1e9, hi_flops / 1e9);
  if (e.model == "measured") {
    std::printf("  measured at this shape: the results' median (no model needed)\n");
  } else if (const auto* m = e.calibrated ? compute->find(e.model, dt) : nullptr) {
    std::printf("  operator model %s: e_compute %.3f, e_memory %.3f, t0 %s, median error %.1f%% over %zu shapes\n",
                e.model.c_str(), m->e_compute, m->e_memory, format_seconds(m->t0).c_str(), 100 * m->median_rel_error,
                m->shapes);
  } else {
    std::printf("  no operator model for %s: roofline bound only (efficiency 1)\n", op.c_str());
  }
}

}  // namespace

void register_predict(CLI::App& app, Context&) {
  struct Args {
    std::string model, op, bytes, level = "world", dtype = "float32", shape, train;
    model::LevelMap levels;
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
  cmd->add_option("--shape", a->shape, "compute operator shape, e.g. 512,512,512 or M=512,N=512,K=512");
  cmd->add_option("--train", a->train,
                  "a training step: layers=..,hidden=..,heads=..,seq=..,micro_batch=..,global_batch=..,dp=..,tp=..,pp=..");
  cmd->add_option("--tp-level", a->levels.tp, "comm level of tensor-parallel traffic (world, intra, inter)");
  cmd->add_option("--dp-level", a->levels.dp, "comm level of data-parallel traffic");
  cmd->add_option("--pp-level", a->levels.pp, "comm level of pipeline traffic");
  cmd->callback([a] {
    if (!a->train.empty()) {
      if (a->ranks_given || !a->bytes.empty() || !a->shape.empty() || !a->op.empty())
        throw UsageError("--train takes its layout (dp, tp, pp) from the configuration: not with --op, --bytes, "
                         "--shape or --ranks");
      return predict_train(a->model, a->train, a->levels);
    }
    if (!a->shape.empty()) return predict_operator(a->model, a->op, a->shape, a->dtype);
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
      if (p.bridged)
        std::printf("  gap         between two fitted ranges: time interpolated between their ends (geometrically)\n");
      std::printf("  alpha       %s, 95%% CI [%s, %s]; 1/beta %.3f GB/s\n", format_seconds(s.alpha).c_str(),
                  format_seconds(s.alpha_ci.lo).c_str(), format_seconds(s.alpha_ci.hi).c_str(),
                  s.beta > 0 ? 1e-9 / s.beta : std::numeric_limits<double>::infinity());
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
