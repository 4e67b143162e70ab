// The training proxy under MPI, checked two ways (exit status 0 only if both hold):
// 1. Its loss curve equals the single-rank run's (computed on rank 0 over MPI_COMM_SELF,
//    same model, batch and seed) within a tolerance derived from the reduction order.
// 2. What every rank executed in step 0 (traced) is its stage's plan (plan_step):
//    the same ops in the same order, names, kernels, families, shapes, FLOPs and bytes,
//    the same communication with the same sizes.
// One rank has no other layout to compare with: --gradient-check checks its gradient
// against a central difference of its loss instead (gradient_check below).
// --expect-decrease adds: the loss falls over the run (first step vs mean of the last 3).
// A stale-synchronous layout's reference is the single-rank run with the same delay (the
// gradients summed over dp are the single rank's): equality holds; its curve beside the
// synchronous run's is printed, what the delay costs the training.
// A compressed layout (compress=bf16) rounds its gradients: its reference is the
// uncompressed single-rank run, the limit bfloat16's precision (compressed_limit), and
// the curve must differ from it by more than the reordering tolerance (the sync really
// was compressed).
// A mixed-precision layout (master=float64 beside dtype=float32) has the single-rank
// mixed run as its reference; its distance to the all-float64 run is printed beside the
// all-float32 run's.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "suites/common/runtime.hpp"
#include "suites/train/config_options.hpp"
#include "suites/train/proxy.hpp"

using namespace sextant;

namespace {

bool close(double a, double b) { return std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b)); }

// First difference between a traced and a planned stage, or "".
std::string compare(const model::ComputeOp& got, const model::ComputeOp& want) {
  if (got.name != want.name || got.kernel != want.kernel || got.family != want.family || got.shape != want.shape ||
      !close(got.flops, want.flops) || !close(got.bytes, want.bytes) || got.dtype != want.dtype) {
    std::ostringstream s;
    s << "executed " << got.name << " " << got.kernel << "/" << got.family << " [" << got.shape << "] flops "
      << got.flops << " bytes " << got.bytes << " dtype '" << got.dtype << "'; planned " << want.name << " "
      << want.kernel << "/" << want.family << " [" << want.shape << "] flops " << want.flops << " bytes " << want.bytes
      << " dtype '" << want.dtype << "'";
    return s.str();
  }
  return "";
}
std::string compare(const model::CommOp& got, const model::CommOp& want) {
  if (got.name != want.name || got.traffic != want.traffic || got.collective != want.collective ||
      !close(got.bytes, want.bytes) || got.ranks != want.ranks || got.after != want.after || got.dtype != want.dtype) {
    std::ostringstream s;
    s << "executed " << got.name << " " << to_string(got.traffic) << " " << got.collective << " " << got.bytes << " B on "
      << got.ranks << " after '" << got.after << "' dtype '" << got.dtype << "'; planned " << want.name << " "
      << to_string(want.traffic) << " " << want.collective << " " << want.bytes << " B on " << want.ranks << " after '"
      << want.after << "' dtype '" << want.dtype << "'";
    return s.str();
  }
  return "";
}
template <class T>
std::string compare(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    if (auto d = compare(got[i], want[i]); !d.empty()) return std::string(what) + " #" + std::to_string(i) + ": " + d;
  if (got.size() != want.size())
    return std::string(what) + ": executed " + std::to_string(got.size()) + " ops, planned " +
           std::to_string(want.size());
  return "";
}
std::string compare(const model::Phase& got, const model::Phase& want, const char* what) {
  auto d = compare(got.compute, want.compute, what);
  return d.empty() ? compare(got.comm, want.comm, what) : d;
}

std::string compare(const model::StagePlan& got, const model::StagePlan& want) {
  if (got.layers_first != want.layers_first || got.layers_count != want.layers_count)
    return "layers differ";
  if (got.parameters != want.parameters)
    return "parameters: executed " + std::to_string(got.parameters) + ", planned " + std::to_string(want.parameters);
  for (auto d : {compare(got.forward, want.forward, "forward"), compare(got.backward, want.backward, "backward"),
                 compare(got.optimizer, want.optimizer, "optimizer"), compare(got.dp_sync, want.dp_sync, "dp_sync"),
                 compare(got.send_activation, want.send_activation), compare(got.send_gradient, want.send_gradient)})
    if (!d.empty()) return d;
  return "";
}

// compress=bf16 against the uncompressed curve. bfloat16 has 8 significant bits, so
// rounding to it changes a value by at most u = 2^-8 of it. Each gradient element is
// rounded on every rank and each of the dp - 1 sums is rounded again: a relative error
// of at most dp u of the terms' magnitudes, and AdamW's update m / sqrt(v) carries a
// relative change of its gradient through at about the same size. A step's loss moves
// by the update's effect on it, so the curve moves by about that relative error times
// the loss's fall so far, which over these checks' 20 steps is below the loss itself:
// dp u of the loss, 0.8% at dp = 2. The limit is 4x that, for cancellation in the sums
// (the error is relative to the terms, not to their sum) and the optimizer's
// amplification. A sync that reduced nothing (each rank updating with its own
// gradients) moved the curve by 0.3.
double compressed_limit(const model::TrainConfig& c) { return 4 * c.dp * 0x1.0p-8; }

// The gradient against the loss it is the gradient of (one rank, float64). With SGD on a
// repeated batch, step 1's loss is L(p0 - lr g), so a central difference in lr gives the
// directional derivative along the computed gradient, -g . grad L, which equals -|g|^2
// exactly when g is the gradient (a wrong term anywhere in backward makes g . grad L and
// |g|^2 differ by that term's share). The learning rate moves the loss by about 1e-4 of
// itself: the truncation error of the difference is then ~1e-8 relative and the
// rounding error ~1e-9 (loss sums of ~1e3 terms at u = 1.1e-16 each), so the limit
// 1e-6 has a margin of 100 over both, and a factor 2 on a gradient holding 0.1% of
// |g|^2 still fails it by 1000x.
int gradient_check(model::TrainConfig c, train::TrainRunOptions o) {
  c.optimizer = model::Optimizer::sgd;
  c.dtype = "float64";
  o.repeat_first_batch = o.gradient_norm = true;
  o.warmup = 0, o.steps = 2, o.max_steps = 0, o.min_seconds = 0;
  auto loss_after_one_step = [&](double lr, double* norm2) {
    o.lr = lr;
    auto r = train::run_training(c, o, MPI_COMM_SELF);
    if (norm2) *norm2 = r.gradient_norm2.at(0);
    return std::pair{r.loss.at(0), r.loss.at(1)};
  };
  double g2 = 0;
  auto [l0, l0_again] = loss_after_one_step(0, &g2);
  // The experts' routing is piecewise constant in the parameters: a step that moves a
  // token's choice across a boundary breaks the difference (a step of 1e-4 did, in one of
  // 512 routing decisions), so with experts it is 100 times shorter (float64 still resolves
  // the difference to ~1e-10).
  const double lr = (c.experts > 0 ? 1e-6 : 1e-4) * l0 / g2;
  const double plus = loss_after_one_step(lr, nullptr).second, minus = loss_after_one_step(-lr, nullptr).second;
  const double derivative = (plus - minus) / (2 * lr);  // d/dlr L(p0 - lr g) = -g . grad L
  const double difference = std::fabs(-derivative - g2) / g2;
  std::printf("gradient check: L(p0) %.16g (after a step of lr 0: %.16g), |g|^2 %.10g, central difference of "
              "L(p0 - lr g) at lr %.3g: g . grad L = %.10g, relative difference %.3g (limit 1e-6)\n",
              l0, l0_again, g2, lr, -derivative, difference);
  int failures = 0;
  if (l0_again != l0) {
    std::printf("FAIL: a step with learning rate 0 changed the loss on the same batch\n");
    ++failures;
  }
  if (!(g2 > 0) || !(difference <= 1e-6)) {
    std::printf("FAIL: the computed gradient is not the gradient of the loss\n");
    ++failures;
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"training proxy check: loss curve against one rank, execution against the plan"};
  model::TrainConfig c;
  c.layers = 4, c.hidden = 32, c.heads = 4, c.seq = 16, c.vocab = 64, c.micro_batch = 2, c.global_batch = 8;
  c.dtype = "float64";
  train::TrainRunOptions o;
  o.warmup = 0;
  c.dense = train::default_dense_path();
  bool expect_decrease = false, check_gradient = false;
  train::add_config_options(app, c);
  app.add_option("--steps", o.steps);
  app.add_option("--lr", o.lr);
  app.add_flag("--expect-decrease", expect_decrease);
  app.add_flag("--gradient-check", check_gradient, "one rank: the gradient against a central difference of the loss");
  try {
    app.parse(argc, argv);
    c.validate();
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "train_check: %s\n", e.what());
    return 2;
  }

  Runtime rt(argc, argv);
  o.wait = rt.oversubscribed() ? WaitMode::yield : WaitMode::blocking;
  o.trace = true;
  o.poison_released = true;  // ZeRO-3: a parameter used without its gather reads NaN
  int failures = 0;
  try {
    const double t0 = MPI_Wtime();
    auto result = train::run_training(c, o, rt.world());
    const double t_layout = MPI_Wtime() - t0;

    // The single-rank reference, on rank 0 alone (the others wait, yielding), without
    // recomputation. A one-rank layout without it has none to compare with (it would be
    // itself): the gradient check is its truth.
    if (c.ranks() > 1 || c.recompute != model::Recompute::none) {
      model::TrainConfig one = c;
      one.dp = one.tp = one.pp = one.ep = 1;
      one.sp = false;
      one.recompute = model::Recompute::none;  // recomputation changes when, not what, a step computes
      one.zero = 0;
      one.compress = model::Compression::none;
      std::vector<double> reference(result.loss.size()), synchronous;
      const double t1 = MPI_Wtime();
      if (rt.is_root()) reference = train::run_training(one, o, MPI_COMM_SELF).loss;
      bcast(reference.data(), int(reference.size()), MPI_DOUBLE, 0, rt.world(), WaitMode::yield);
      if (rt.is_root() && c.staleness > 0) {
        one.staleness = 0;
        synchronous = train::run_training(one, o, MPI_COMM_SELF).loss;
      }
      // Mixed precision beside the whole step in its dtype and in the master's (reported:
      // how far each strays from the wider run is what the master copy is for).
      std::vector<double> narrow, wide;
      if (rt.is_root() && c.mixed()) {
        model::TrainConfig all = one;
        all.staleness = c.staleness;  // `one` is the synchronous run by now
        all.master.clear();
        narrow = train::run_training(all, o, MPI_COMM_SELF).loss;
        all.dtype = c.master_dtype();
        wide = train::run_training(all, o, MPI_COMM_SELF).loss;
      }
      const double t_reference = MPI_Wtime() - t1;

      // Tolerance: layouts differ only in the order of floating-point sums (tp splits the
      // GEMM reductions, dp and micro-batches split the gradient and loss sums). One sum
      // of n terms reordered moves by at most (n - 1) u sum |x_i|; the longest reduction
      // here is n = max(4 hidden, vocab, tokens per step), and K steps of training carry
      // such perturbations forward. Allow K n u with a factor 100 for the conditioning of
      // the sums and the optimizer's amplification of small relative changes (AdamW divides
      // by sqrt(v)); a real error (a missing allreduce, a wrong shard) moves the loss by
      // orders of magnitude more (>= 1e-4 relative after a few steps).
      const double u = c.dtype == "float64" ? 0x1.0p-53 : 0x1.0p-24;
      const double n = std::max({4.0 * c.hidden, double(c.vocab), double(c.global_batch) * c.seq});
      const double reordering = 100 * double(o.steps) * n * u;
      const bool compressed = c.compress != model::Compression::none && c.dp > 1;
      const double tolerance = compressed ? compressed_limit(c) : reordering;
      double worst = 0;  // NaN once any step's is (std::max would drop it)
      for (std::size_t s = 0; s < reference.size(); ++s)
        if (const double d = std::fabs(result.loss[s] - reference[s]) / std::fabs(reference[s]); !(d <= worst)) worst = d;
      if (rt.is_root()) {
        std::printf("layout dp %d tp %d pp %d: %zu steps in %.2f s, reference %.2f s\n", c.dp, c.tp, c.pp,
                    result.loss.size(), t_layout, t_reference);
        std::printf("%-5s %-22s %-22s %-15s %s\n", "step", "loss", "single-rank", "rel. difference",
                    synchronous.empty() ? "" : "synchronous (no delay)");
        for (std::size_t s = 0; s < reference.size(); ++s)
          std::printf("%-5zu %-22.16g %-22.16g %-15.3g %s\n", s, result.loss[s], reference[s],
                      std::fabs(result.loss[s] - reference[s]) / std::fabs(reference[s]),
                      synchronous.empty() ? "" : std::to_string(synchronous[s]).c_str());
        std::printf("worst relative difference %.3g, tolerance %.3g\n", worst, tolerance);
        if (!wide.empty()) {
          auto mean_difference = [&](const std::vector<double>& loss) {
            double sum = 0;
            for (std::size_t s = 0; s < wide.size(); ++s) sum += std::fabs(loss[s] - wide[s]) / std::fabs(wide[s]);
            return sum / double(wide.size());
          };
          std::printf("mean relative difference to the %s run: mixed precision %.3g, all %s %.3g\n",
                      c.master_dtype().c_str(), mean_difference(result.loss), c.dtype.c_str(), mean_difference(narrow));
        }
        if (!(worst <= tolerance)) {
          std::printf("FAIL: the loss curve differs from the single-rank run\n");
          ++failures;
        }
        if (compressed && !(worst > reordering)) {
          std::printf("FAIL: the compressed run's loss curve is the uncompressed one's (within %.3g): no gradient was "
                      "rounded\n", reordering);
          ++failures;
        }
      }
    } else if (check_gradient) {
      failures += gradient_check(c, o);
    }
    if (rt.is_root()) {
      if (expect_decrease) {
        const auto& l = result.loss;
        const double tail = l.size() >= 3 ? (l[l.size() - 1] + l[l.size() - 2] + l[l.size() - 3]) / 3 : l.back();
        std::printf("loss %.6g -> %.6g (mean of the last 3)\n", l.front(), tail);
        if (!(tail < 0.9 * l.front())) {
          std::printf("FAIL: the loss did not fall by 10%%\n");
          ++failures;
        }
      }
    }

    // Execution against the plan, on every rank; failures counted on rank 0.
    const auto plan = model::plan_step(c);
    const std::string diff = compare(result.executed, plan.stages[result.executed.stage]);
    if (!diff.empty())
      std::printf("FAIL: rank %d (stage %d) did not execute its plan: %s\n", rt.rank(), result.executed.stage,
                  diff.c_str());
    int mine = diff.empty() ? 0 : 1, bad = 0;
    allreduce(&mine, &bad, 1, MPI_INT, MPI_SUM, rt.world(), o.wait);
    if (rt.is_root()) {
      if (bad == 0)
        std::printf("every rank executed its stage's plan (%zu forward, %zu backward ops on stage 0)\n",
                    plan.stages[0].forward.compute.size(), plan.stages[0].backward.compute.size());
      failures += bad;
    }
  } catch (const std::exception& e) {
    abort_all("train_check: rank " + std::to_string(rt.rank()) + ": " + e.what());
  }
  int total = 0;
  allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, rt.world(), o.wait);
  return total == 0 ? 0 : 1;
}
