// sextant report RESULTS [--model MODEL] [-o DIR]: figures and a summary, drawn by
// tools/python/sextant_report.py (matplotlib), which this runs.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {
namespace {

std::string report_script() {
  for (const auto& dir : split_list(SEXTANT_PYTHON_DIRS, ':')) {
    auto path = std::filesystem::path(dir) / "sextant_report.py";
    if (std::filesystem::exists(path)) return path.string();
  }
  throw Error(std::string("cannot find sextant_report.py in ") + SEXTANT_PYTHON_DIRS);
}

}  // namespace

void register_report(CLI::App& app, Context&) {
  struct Args {
    std::string results, model, output = "report";
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("report", "Draw figures and a summary from a results file (and its model)");
  cmd->add_option("results", a->results, "results file (sextant.results)")->required();
  cmd->add_option("--model", a->model, "model file (sextant.model) to draw the fits");
  cmd->add_option("-o,--output", a->output, "output directory (default ./report)");
  cmd->callback([a] {
    std::vector<std::string> args{SEXTANT_PYTHON, report_script(), a->results, "-o", a->output};
    if (!a->model.empty()) {
      args.push_back("--model");
      args.push_back(a->model);
    }
    // The `sextant` Python module (the C++ model, for the model curves), from this build
    // or where it is installed, ahead of whatever PYTHONPATH holds.
    std::string path = SEXTANT_PYTHON_MODULE_DIRS;
    if (const char* given = std::getenv("PYTHONPATH"); given && *given) path += std::string(":") + given;
    setenv("PYTHONPATH", path.c_str(), 1);
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());  // returns only on failure
    throw Error(std::string("cannot run ") + SEXTANT_PYTHON + " for the report");
  });
}

}  // namespace sextant::cli
