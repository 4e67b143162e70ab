// Subcommands that later versions fill.
#include "tools/sextant/cli.hpp"

namespace sextant::cli {

void register_report(CLI::App& app, Context&) {
  auto* cmd = app.add_subcommand("report", "Plots and tables from results and model files (not yet)");
  cmd->allow_extras();
  cmd->callback([] { not_yet("sextant report"); });
}

}  // namespace sextant::cli
