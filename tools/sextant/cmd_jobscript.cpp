// sextant jobscript: writes an sbatch script for one run of the chosen suites at
// NODES x RANKS-PER-NODE, so nobody hand-edits templates. The script sources
// jobscripts/common.sh (installed, or the source tree's) like the scripts in
// jobscripts/: site settings come from an environment file (jobscripts/site.env
// style), results land in results/<cluster>/<jobid>/ with the job's provenance, and
// every suite's results file is fitted at the end.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include "core/replace_file.hpp"
#include "core/units.hpp"
#include "suites/common/runtime.hpp"
#include "tools/sextant/run_options.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {
namespace {

struct JobscriptArgs {
  int nodes = 1, ranks_per_node = 2;
  std::string suites = "comm", time, partition, account, job_name, log = "sextant-%x-%j.out", site_env, run_args,
              output;
};

// One word for bash: 'text' with embedded quotes closed and escaped.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Values that go onto #SBATCH lines unquoted: no blanks, quotes or shell syntax.
void check_sbatch_value(const std::string& option, const std::string& value) {
  static const std::regex safe("[A-Za-z0-9_.,:%+@=/-]+");
  if (!std::regex_match(value, safe))
    throw UsageError(option + " '" + value + "': use letters, digits and _ . , : % + @ = / - only");
}

// [D-]HH:MM:SS, as sbatch --time takes it.
void check_time(const std::string& value) {
  static const std::regex form(R"(((\d+)-)?(\d{1,3}):(\d{2}):(\d{2}))");
  std::smatch m;
  if (!std::regex_match(value, m, form) || std::stoi(m[4]) > 59 || std::stoi(m[5]) > 59 ||
      (m[2].matched && std::stoi(m[3]) > 23) || (std::stoi(m[3]) == 0 && std::stoi(m[4]) == 0 && std::stoi(m[5]) == 0 && !m[2].matched))
    throw UsageError("--time '" + value + "': use HH:MM:SS or D-HH:MM:SS (a non-zero limit)");
}

// SEXTANT_PARTITION, SEXTANT_ACCOUNT and SEXTANT_TIME as bash sees them after
// sourcing the site environment file (the environment still wins, as in a job).
std::vector<std::string> site_defaults(const std::string& file) {
  std::string cmd = "bash -c 'set -a; source \"$1\" >/dev/null || exit 3; "
                    "printf \"%s\\n%s\\n%s\\n\" \"${SEXTANT_PARTITION:-}\" \"${SEXTANT_ACCOUNT:-}\" \"${SEXTANT_TIME:-}\"' "
                    "sextant-site-env " +
                    shell_quote(file) + " </dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw Error("--site-env " + file + ": cannot start bash to read it");
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  int status = pclose(p);
  if (status != 0) throw Error("--site-env " + file + ": bash could not source it (see the message above)");
  std::vector<std::string> values;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) values.push_back(line);
  values.resize(3);
  return values;
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::string self_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("sextant") : p.string();
}

// The job itself is jobscripts/common.sh's (settings, modules, results directory,
// provenance, launching, fitting): the script only names what was chosen here.
const char* const body = R"BODY(set -euo pipefail

# Site settings (modules, sextant binary, MPI launcher, results root) come from one
# environment file: SEXTANT_SITE_ENV at submission, else the one named when this
# script was generated (none: empty). A variable already set in the job's environment
# wins over the file (jobscripts/site.env documents every setting).
SEXTANT_SITE_ENV=${SEXTANT_SITE_ENV:-@SITE_ENV@}
SEXTANT_DEFAULT_BIN=@BIN@  # the sextant that generated this script
SEXTANT_RANKS_PER_NODE=@RANKS_PER_NODE@
common=@COMMON@
[ -r "$common" ] || { echo "sextant job: $common is not readable on this node" >&2; exit 1; }
# shellcheck disable=SC1090
source "$common"
sextant_job_init jobscript
suites=(@SUITES@)
run_args=(@RUN_ARGS@)

# Script arguments go to every `sextant run` too: sbatch THIS_SCRIPT --quick
for suite in "${suites[@]}"; do
  sextant_run_suite "$suite" "$nodes" "$per_node" "$outdir/$suite.h5" "${run_args[@]}" "$@"
done
for suite in "${suites[@]}"; do
  sextant_fit "$outdir/$suite.h5" "$outdir/$suite.model.h5"
done
)BODY";

// jobscripts/common.sh beside the installed binary (<prefix>/share/sextant/jobscripts),
// else the source tree's, for a binary run from its build tree.
std::string common_script() {
  namespace fs = std::filesystem;
  const fs::path exe = self_path();
  for (const fs::path& candidate : {exe.parent_path().parent_path() / SEXTANT_DATADIR / "sextant/jobscripts/common.sh",
                                    fs::path(SEXTANT_SOURCE_DIR) / "jobscripts/common.sh"}) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
  }
  throw Error("jobscript: jobscripts/common.sh is neither installed beside " + exe.string() +
              " (" SEXTANT_DATADIR "/sextant/jobscripts) nor in the source tree " + SEXTANT_SOURCE_DIR);
}

void replace_all(std::string& text, const std::string& key, const std::string& value) {
  for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
    text.replace(at, key.size(), value);
}

std::string generate(JobscriptArgs a, const Context& ctx) {
  if (a.nodes < 1) throw UsageError("--nodes " + std::to_string(a.nodes) + ": must be >= 1");
  if (a.ranks_per_node < 1) throw UsageError("--ranks-per-node " + std::to_string(a.ranks_per_node) + ": must be >= 1");
  auto suites = split_list(a.suites);
  if (suites.empty()) throw UsageError("--suites: empty list (use comm, compute, train)");
  for (const auto& s : suites)
    if (s != "comm" && s != "compute" && s != "train")
      throw UsageError("--suites: '" + s + "' is not a suite (use comm, compute, train)");
  for (std::size_t i = 0; i < suites.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (suites[i] == suites[j]) throw UsageError("--suites: '" + suites[i] + "' is listed twice");

  std::string site_env;
  if (!a.site_env.empty()) {
    if (!std::filesystem::is_regular_file(a.site_env))
      throw UsageError("--site-env " + a.site_env + ": no such file");
    site_env = std::filesystem::absolute(a.site_env).lexically_normal().string();
    auto d = site_defaults(site_env);
    if (a.partition.empty()) a.partition = d[0];
    if (a.account.empty()) a.account = d[1];
    if (a.time.empty()) a.time = d[2];
  }
  if (a.time.empty()) a.time = "01:00:00";
  check_time(a.time);
  if (!a.partition.empty()) check_sbatch_value("--partition", a.partition);
  if (!a.account.empty()) check_sbatch_value("--account", a.account);
  if (a.job_name.empty()) {
    a.job_name = "sextant";
    for (const auto& s : suites) a.job_name += "-" + s;
  }
  check_sbatch_value("--job-name", a.job_name);
  check_sbatch_value("--log", a.log);

  std::string run_words;
  const auto words = split_words(a.run_args);
  for (const auto& w : words) {
    if (w == "-o" || w.rfind("--output", 0) == 0 || w.rfind("--suite", 0) == 0 || (w.size() > 2 && w.rfind("-o", 0) == 0))
      throw UsageError("--run-args: '" + w + "' is set by the job script (one results file per suite)");
    run_words += (run_words.empty() ? "" : " ") + shell_quote(w);
  }
  for (const auto& suite : suites) {
    try {
      check_run_words(words, suite);
    } catch (const UsageError& e) {
      throw UsageError("--run-args '" + a.run_args + "' for --suite " + suite + ": " + e.what());
    }
  }
  std::string suite_words;
  for (const auto& s : suites) suite_words += (suite_words.empty() ? "" : " ") + s;

  std::string command;
  for (int i = 0; i < ctx.argc; ++i) {
    std::string w = ctx.argv[i];
    for (char& c : w)
      if (c == '\n' || c == '\r') c = ' ';
    command += (i ? " " : "") + (w.find_first_of(" '\"$`\\") == std::string::npos ? w : shell_quote(w));
  }
  auto provenance = local_provenance(ctx.argc, ctx.argv);

  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# sextant job: suites " << suite_words << " on " << a.nodes << " node(s) x " << a.ranks_per_node
    << " ranks per node.\n"
    << "# Generated by: " << command << "\n"
    << "# (sextant " << provenance.fields["sextant_version"] << ", " << provenance.fields["date_utc"]
    << "). Regenerate rather than edit; see jobscripts/README.md.\n"
    << "#SBATCH --job-name=" << a.job_name << "\n"
    << "#SBATCH --nodes=" << a.nodes << "\n"
    << "#SBATCH --ntasks-per-node=" << a.ranks_per_node << "\n"
    << "#SBATCH --time=" << a.time << "\n";
  if (!a.partition.empty()) s << "#SBATCH --partition=" << a.partition << "\n";
  if (!a.account.empty()) s << "#SBATCH --account=" << a.account << "\n";
  s << "#SBATCH --output=" << a.log << "\n\n";

  std::string text = body;
  replace_all(text, "@SITE_ENV@", site_env.empty() ? "" : shell_quote(site_env));
  replace_all(text, "@COMMON@", shell_quote(common_script()));
  replace_all(text, "@BIN@", shell_quote(self_path()));
  replace_all(text, "@SUITES@", suite_words);
  replace_all(text, "@RUN_ARGS@", run_words);
  replace_all(text, "@RANKS_PER_NODE@", std::to_string(a.ranks_per_node));
  return s.str() + text;
}

void write_script(const std::string& path, const std::string& text) {
  FileReplacement replacement(path);
  {
    std::ofstream out(replacement.path(), std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw Error(path + ": write failed");
  }
  ::chmod(replacement.path().c_str(), 0755);
  replacement.commit();
}

}  // namespace

void register_jobscript(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<JobscriptArgs>();
  auto* cmd = app.add_subcommand("jobscript", "Write an sbatch script that runs suites and fits the model");
  cmd->add_option("--nodes", a->nodes, "nodes (#SBATCH --nodes; default 1)");
  cmd->add_option("--ranks-per-node", a->ranks_per_node, "MPI ranks per node (#SBATCH --ntasks-per-node; default 2)");
  cmd->add_option("--suites", a->suites, "comma-separated suites to run: comm, compute, train (default comm)");
  cmd->add_option("--time", a->time, "time limit HH:MM:SS or D-HH:MM:SS (default: SEXTANT_TIME of --site-env, else 01:00:00)");
  cmd->add_option("--partition", a->partition, "partition (default: SEXTANT_PARTITION of --site-env; none: the cluster's)");
  cmd->add_option("--account", a->account, "account (default: SEXTANT_ACCOUNT of --site-env)");
  cmd->add_option("--job-name", a->job_name, "job name (default sextant-<suites>)");
  cmd->add_option("--log", a->log, "sbatch --output pattern for the job log (default sextant-%x-%j.out)");
  cmd->add_option("--site-env", a->site_env, "site environment file (jobscripts/site.env style) the job sources");
  cmd->add_option("--run-args", a->run_args, "extra `sextant run` options, e.g. \"--quick --collectives allreduce\"");
  cmd->add_option("-o,--output", a->output, "write the script here (default: stdout)");
  cmd->callback([&ctx, a] {
    std::string text = generate(*a, ctx);
    if (a->output.empty()) {
      std::cout << text;
      return;
    }
    write_script(a->output, text);
    std::cerr << "sextant: wrote " << a->output << " (submit with: sbatch " << a->output << ")\n";
  });
}

}  // namespace sextant::cli
