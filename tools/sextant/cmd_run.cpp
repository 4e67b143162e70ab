// sextant run --suite comm|compute|train: measure, writing a results file (each suite's
// options: run_options.hpp).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/replace_file.hpp"
#include "suites/comm/harness.hpp"
#include "suites/compute/suite.hpp"
#include "suites/train/pipeline.hpp"
#include "suites/common/json_results.hpp"
#include "suites/common/results.hpp"
#include "suites/common/runtime.hpp"
#include "tools/sextant/cli.hpp"
#include "tools/sextant/run_options.hpp"

namespace sextant::cli {
namespace {

// SIGINT and SIGTERM (Ctrl-C, a scheduler's time limit, mpiexec forwarding either) end
// the run at once and say where the measurements are: the results file holds every
// benchmark that finished, with complete = "no". The process then dies by the signal
// itself (the shell sees 128 + the signal): a launcher tells a rank killed by a signal
// from one that ended (MPICH's Hydra returned 0 for ranks that exited 143 on its
// SIGTERM). Only async-signal-safe calls in the handler.
char interrupted_by_sigint[600], interrupted_by_sigterm[600];

extern "C" void on_interrupt(int signal) {
  const char* message = signal == SIGINT ? interrupted_by_sigint : interrupted_by_sigterm;
  const ssize_t written [[maybe_unused]] = ::write(STDERR_FILENO, message, std::strlen(message));  // one write: whole lines
  ::signal(signal, SIG_DFL);
  ::raise(signal);
  ::_exit(128 + signal);  // not reached: the default action ends the process
}

void exit_on_interrupt(const std::string& results_path) {
  for (auto [buffer, name] : {std::pair{interrupted_by_sigint, "SIGINT"}, std::pair{interrupted_by_sigterm, "SIGTERM"}})
    std::snprintf(buffer, sizeof interrupted_by_sigint,
                  "sextant: interrupted by %s: what finished is in %s (meta complete = no)\n", name,
                  results_path.c_str());
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace

void register_run(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Measure a suite and write a results file (run under mpiexec)");
  args->add(*cmd);
  cmd->callback([&ctx, args] {
    args->check_combination();
    comm::Options comm_opts = args->comm.resolve(args->measure, args->suite != "compute");
    compute::SuiteOptions compute_opts = args->compute.resolve(args->measure);
    Runtime rt(ctx.argc, ctx.argv);
    if (!comm_opts.rank_counts.empty() && comm_opts.rank_counts.back() > rt.size())  // before any file is made
      throw UsageError("--ranks: " + std::to_string(comm_opts.rank_counts.back()) +
                       " ranks asked for, the launch has " + std::to_string(rt.size()));
    try {
      std::string path = args->output;
      if (path.empty()) {
        if (rt.is_root()) std::filesystem::create_directories("results");
        path = "results/" + default_results_name(rt.machine().hostname);
      }
      // Results are written as they are measured, so an existing file would be truncated
      // before the new run has measured anything: refused unless asked for. Decided on
      // rank 0 (the writer), for every rank.
      int exists = rt.is_root() && !args->overwrite && std::filesystem::exists(path) ? 1 : 0;
      SEXTANT_MPI_CHECK(MPI_Bcast(&exists, 1, MPI_INT, 0, MPI_COMM_WORLD));
      if (exists)
        throw UsageError("-o " + path + ": exists; sextant run replaces a results file only with --overwrite");
      exit_on_interrupt(path);
      std::unique_ptr<ResultsFile> results;
      std::unique_ptr<JsonResults> json;
      int taken = 0;  // by a run that created the name since the check above
      if (rt.is_root()) {
        // The JSON first: an unwritable --json path stops the run before the results file exists.
        if (!args->json.empty() || !args->csv.empty())
          json = std::make_unique<JsonResults>(args->json, args->csv, rt.provenance(), args->suite);
        try {
          results = std::make_unique<ResultsFile>(path, rt.provenance(), args->overwrite);
          results->root().group("meta").set_attr("suite", args->suite);
          std::cerr << "sextant: writing " << path << "\n";
        } catch (const TargetExists&) {
          taken = 1;
        }
      }
      SEXTANT_MPI_CHECK(MPI_Bcast(&taken, 1, MPI_INT, 0, MPI_COMM_WORLD));
      if (taken) throw UsageError("-o " + path + ": another run created it as this one started; not replaced");
      comm::Outcome outcome;
      try {
        if (args->suite == "comm") outcome = comm::run_comm_suite(rt, comm_opts, results.get(), json.get());
        if (args->suite == "compute")
          outcome.wrong = compute::run_compute_suite(rt, compute_opts, results.get(), json.get());
        if (args->suite == "train")
          outcome = train::run_train_pipeline(rt, args->train.resolve(args->measure, args->comm), comm_opts, compute_opts, path, results,
                                              json.get());
      } catch (const UsageError&) {
        // Raised before anything is measured: the files just made hold nothing.
        if (rt.is_root()) {
          results.reset();
          json.reset();
          std::error_code ec;
          std::filesystem::remove(path, ec);
          if (!args->json.empty()) std::filesystem::remove(args->json, ec);
          if (!args->csv.empty())
            for (const auto& table : JsonResults::csv_tables(args->suite))
              std::filesystem::remove(JsonResults::csv_path(args->csv, table), ec);
        }
        throw;
      }
      // Wrong values and missing sizes are recorded results: the run did finish.
      if (results) results->mark_complete();
      if (json) json->mark_complete();
      if (outcome.wrong > 0) {
        if (rt.is_root())
          std::cerr << "sextant: validation FAILED: " << outcome.wrong << " wrong results (see WRONG lines above)\n";
        ctx.exit_code = 1;
      }
      if (outcome.unmeasured > 0) {
        if (rt.is_root())
          std::cerr << "sextant: " << outcome.unmeasured
                    << " sizes could not be measured: stored as missing (NaN, the reason in 'unmeasured'), "
                       "left out of fits\n";
        ctx.exit_code = 1;
      }
    } catch (const UsageError&) {
      if (!rt.is_root()) throw ReportedElsewhere{2};  // raised alike on every rank: rank 0 says it
      throw;
    } catch (const std::exception& e) {
      if (rt.size() > 1) abort_all("sextant: rank " + std::to_string(rt.rank()) + ": " + e.what());
      throw;
    }
  });
}

}  // namespace sextant::cli
