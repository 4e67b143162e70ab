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

// Checks of option values. CLI11 checks a value only when it is given, so the defaults
// that mean "not given" never meet them.
namespace checks {
extern const CLI::Validator names;     // a comma-separated list in which no name is empty
CLI::Validator above(double bound);     // a finite number greater than bound
extern const CLI::Validator fraction;  // a finite number in (0, 1)
}  // namespace checks

// No option of sextant has the empty string for a value: given empty, every option of
// every subcommand is refused with its name (an empty -o or --collectives would
// otherwise read as "not given" and run something else than asked).
void refuse_empty_values(CLI::App& app);

// For subcommands a later version fills: says so and fails.
void not_yet(const std::string& what);

}  // namespace sextant::cli
