// sextant_train_proxy: runs the training proxy once and prints the loss curve, step times
// and the per-phase breakdown (data to stdout, status to stderr).
//   mpiexec.mpich -n 2 sextant_train_proxy --dp 2 --steps 20
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "core/error.hpp"
#include "suites/common/runtime.hpp"
#include "suites/train/config_options.hpp"
#include "suites/train/proxy.hpp"

namespace {

using namespace sextant;

struct Args {
  model::TrainConfig config;
  train::TrainRunOptions run;
  std::string wait;
};

void add_options(CLI::App& app, Args& a) {
  a.config.dense = train::default_dense_path();
  train::add_config_options(app, a.config);
  app.add_option("--steps", a.run.steps, "measured steps")->capture_default_str();
  app.add_option("--warmup", a.run.warmup, "steps before the measured ones")->capture_default_str();
  app.add_option("--seed", a.run.seed, "parameters and data")->capture_default_str();
  app.add_option("--lr", a.run.lr, "learning rate")->capture_default_str();
  app.add_option("--wait", a.wait, "blocking | yield (default: yield when ranks outnumber cores)");
}

int run(int argc, char** argv) {
  CLI::App app{"sextant training proxy: a transformer trained on a DP x TP x PP grid of MPI ranks"};
  Args a;
  add_options(app, a);
  try {
    app.parse(argc, argv);
    a.config.validate();
  } catch (const CLI::ParseError& e) {
    return app.exit(e);  // before MPI_Init: nothing to finalise
  } catch (const UsageError& e) {
    std::cerr << "sextant_train_proxy: " << e.what() << "\n";
    return 2;
  }
  Runtime rt(argc, argv);
  try {
    if (a.wait == "blocking") a.run.wait = WaitMode::blocking;
    else if (a.wait == "yield") a.run.wait = WaitMode::yield;
    else if (a.wait.empty()) a.run.wait = rt.oversubscribed() ? WaitMode::yield : WaitMode::blocking;
    else throw UsageError("--wait '" + a.wait + "': use blocking or yield");
    if (rt.is_root() && rt.oversubscribed())
      std::fprintf(stderr, "sextant: %d ranks on a node with %d usable CPUs: timings are not meaningful\n", rt.ranks_on_node(),
                   rt.node_cpus());

    const auto r = train::run_training(a.config, a.run, rt.world());
    if (rt.is_root()) {
      const auto& c = a.config;
      std::printf("# dp %d tp %d pp %d, %d micro-batches of %d, %s, %s%s%s%s%s, %s\n", c.dp, c.tp, c.pp,
                  c.micro_batches(), c.micro_batch, c.schedule == model::Schedule::gpipe ? "gpipe" : "1f1b",
                  c.optimizer == model::Optimizer::sgd ? "sgd" : "adamw",
                  c.zero ? (" zero" + std::to_string(c.zero)).c_str() : "", c.overlap_dp ? " overlap" : "",
                  c.staleness ? (" stale" + std::to_string(c.staleness)).c_str() : "",
                  c.compress != model::Compression::none ? (std::string(" compress ") + model::to_string(c.compress)).c_str() : "",
                  c.dtype.c_str());
      std::printf("%-6s %-14s %s\n", "step", "loss", "time_s");
      for (int s = 0; s < r.warmup + r.steps; ++s) {
        if (s < r.warmup)
          std::printf("%-6d %-14.8g (warm-up)\n", s, r.loss[s]);
        else
          std::printf("%-6d %-14.8g %.6f\n", s, r.loss[s], r.step_time[s - r.warmup]);
      }
      std::printf("# median step time %.6f s\n", r.median_step_time());
      std::printf("# per rank, mean over measured steps (seconds)\n");
      std::printf("%-5s %-9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "rank", "dp/tp/pp", "total", "forward",
                  "backward", "optimizer", "tp_comm", "pp_comm", "dp_comm", "ep_comm", "pp_idle", "other");
      for (int k = 0; k < r.ranks; ++k) {
        auto p = r.mean_phases(k);
        char where[32];
        std::snprintf(where, sizeof where, "%d/%d/%d", r.coords[k].dp, r.coords[k].tp, r.coords[k].pp);
        std::printf("%-5d %-9s %9.6f %9.6f %9.6f %9.6f %9.6f %9.6f %9.6f %9.6f %9.6f %9.6f\n", k, where, p.total,
                    p.forward, p.backward, p.optimizer, p.tp_comm, p.pp_comm, p.dp_comm, p.ep_comm,
                    p.pipeline_idle, p.other());
      }
    }
    return 0;
  } catch (const UsageError& e) {
    if (rt.is_root()) std::cerr << "sextant_train_proxy: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    abort_all("sextant_train_proxy: rank " + std::to_string(rt.rank()) + ": " + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
