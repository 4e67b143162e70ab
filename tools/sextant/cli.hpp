#pragma once
// The sextant command: one CLI11 app, one small file per subcommand, each
// registering itself through the list in main.cpp.
#include <CLI/CLI.hpp>

namespace sextant::cli {

struct Context {
  int argc = 0;
  char** argv = nullptr;
  int exit_code = 0;  // set by the subcommand that ran
};

using Register = void (*)(CLI::App& app, Context& ctx);

void register_info(CLI::App& app, Context& ctx);
void register_run(CLI::App& app, Context& ctx);
void register_fit(CLI::App& app, Context& ctx);
void register_predict(CLI::App& app, Context& ctx);
void register_report(CLI::App& app, Context& ctx);
void register_jobscript(CLI::App& app, Context& ctx);
void register_merge(CLI::App& app, Context& ctx);
void register_export(CLI::App& app, Context& ctx);

// For subcommands a later version fills: says so and fails.
void not_yet(const std::string& what);

}  // namespace sextant::cli
