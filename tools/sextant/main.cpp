// sextant: measure, fit, predict. Exit status: 0 success, 1 runtime error (bad
// file, wrong result), 2 usage error (bad option or value).
#include <iostream>

#include "core/error.hpp"
#include "core/version.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {
void not_yet(const std::string& what) {
  throw Error(what + " is not implemented yet in this version of sextant");
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
  try {
    app.parse(argc, argv);
    return ctx.exit_code;
  } catch (const CLI::CallForHelp&) {
    return app.exit(CLI::CallForHelp());
  } catch (const CLI::CallForAllHelp&) {
    return app.exit(CLI::CallForAllHelp());
  } catch (const CLI::CallForVersion&) {
    std::cout << "sextant " SEXTANT_VERSION "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << "sextant: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const UsageError& e) {
    std::cerr << "sextant: " << e.what() << "\n";
    return 2;
  } catch (const ReportedElsewhere& r) {
    return r.exit_code;
  } catch (const std::exception& e) {
    std::cerr << "sextant: " << e.what() << "\n";
    return 1;
  }
}
