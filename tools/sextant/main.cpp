// sextant: measure, fit, predict. Exit status: 0 success, 1 runtime error (bad
// file, wrong result), 2 usage error (bad option or value).
#include <cmath>
#include <cstdio>
#include <iostream>

#include "core/error.hpp"
#include "core/machine.hpp"
#include "core/version.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {
void not_yet(const std::string& what) {
  throw Error(what + " is not implemented yet in this version of sextant");
}

namespace checks {
namespace {
std::string format_number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}
}  // namespace

const CLI::Validator names(
    [](std::string& value) -> std::string {
      std::size_t start = 0;
      for (;;) {
        const auto comma = value.find(',', start);
        if (comma == start || start == value.size()) return "'" + value + "' has an empty name in its list";
        if (comma == std::string::npos) return {};
        start = comma + 1;
      }
    },
    "NAME[,NAME...]");

CLI::Validator above(double bound) {
  return CLI::Validator(
      [bound](std::string& value) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(value, v) || !std::isfinite(v) || !(v > bound))
          return "'" + value + "' is not a finite number greater than " + format_number(bound);
        return {};
      },
      "NUMBER > " + format_number(bound));
}

const CLI::Validator fraction(
    [](std::string& value) -> std::string {
      double v = 0;
      if (!CLI::detail::lexical_cast(value, v) || !(v > 0 && v < 1))
        return "'" + value + "' is not a fraction between 0 and 1";
      return {};
    },
    "FRACTION");
}  // namespace checks

void refuse_empty_values(CLI::App& app) {
  const CLI::Validator non_empty([](std::string& value) { return value.empty() ? std::string("empty value") : ""; }, "");
  std::vector<CLI::App*> apps = app.get_subcommands([](CLI::App*) { return true; });
  apps.push_back(&app);
  for (CLI::App* each : apps)
    for (CLI::Option* option : each->get_options([](CLI::Option* o) { return o->get_type_size() != 0; }))
      option->check(non_empty);
}
}  // namespace sextant::cli

int main(int argc, char** argv) {
  using namespace sextant;
  cli::Context ctx{argc, argv, 0};
  CLI::App app{"sextant: HPC benchmark suite with analytic models (measure, fit, predict)", "sextant"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("sextant ") + SEXTANT_VERSION);
  for (cli::Register reg : {cli::register_info, cli::register_run, cli::register_fit,
                            cli::register_predict, cli::register_report, cli::register_jobscript,
                            cli::register_merge, cli::register_export})
    reg(app, ctx);
  cli::refuse_empty_values(app);
  // Help, the version and usage errors depend on the command line alone: under a
  // launcher every rank would print them alike, so rank 0 alone does.
  const bool says = launcher_rank() <= 0;
  try {
    app.parse(argc, argv);
    return ctx.exit_code;
  } catch (const CLI::CallForHelp&) {
    return says ? app.exit(CLI::CallForHelp()) : 0;
  } catch (const CLI::CallForAllHelp&) {
    return says ? app.exit(CLI::CallForAllHelp()) : 0;
  } catch (const CLI::CallForVersion&) {
    if (says) std::cout << "sextant " SEXTANT_VERSION "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    if (says) std::cerr << "sextant: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const UsageError& e) {
    if (says) std::cerr << "sextant: " << e.what() << "\n";
    return 2;
  } catch (const ReportedElsewhere& r) {
    return r.exit_code;
  } catch (const std::exception& e) {
    std::cerr << "sextant: " << e.what() << "\n";
    return 1;
  }
}
