// sextant jobscript: writes an sbatch script for one run of the chosen suites at
// NODES x RANKS-PER-NODE, so nobody hand-edits templates. The script is
// self-contained: site settings come from an environment file (jobscripts/site.env
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

const char* const body = R"BODY(set -euo pipefail

# Site settings (modules, sextant binary, MPI launcher, results root) come from one
# environment file: SEXTANT_SITE_ENV at submission, else the one named when this
# script was generated. A variable already set in the job's environment wins over
# the file (jobscripts/site.env documents every setting).
site_env=${SEXTANT_SITE_ENV:-@SITE_ENV@}
if [ -n "$site_env" ]; then
  [ -r "$site_env" ] || { echo "sextant job: site environment file '$site_env' is not readable" >&2; exit 1; }
  set -a
  # shellcheck disable=SC1090
  source "$site_env"
  set +a
fi
if [ -n "${SEXTANT_MODULES:-}" ]; then
  set +u  # module implementations read unset variables
  # shellcheck disable=SC2086
  module load $SEXTANT_MODULES
  set -u
fi
default_bin=@BIN@  # the sextant that generated this script
: "${SEXTANT_BIN:=$default_bin}"
: "${SEXTANT_LAUNCHER:=srun}"
: "${SEXTANT_SRUN_ARGS:=--mpi=pmi2}"
: "${SEXTANT_MPIEXEC:=mpiexec.mpich}"
: "${SEXTANT_MPIEXEC_ARGS:=}"
: "${SEXTANT_RUN_ARGS:=}"
suites=(@SUITES@)
run_args=(@RUN_ARGS@)
read -ra site_run_args <<<"$SEXTANT_RUN_ARGS"

nodes=${SLURM_JOB_NUM_NODES:?not inside a Slurm job: submit this script with sbatch}
ntasks=${SLURM_NTASKS:-$((nodes * @RANKS_PER_NODE@))}
per_node=$((ntasks / nodes))
cluster=${SEXTANT_CLUSTER:-${SLURM_CLUSTER_NAME:-$(hostname -s)}}
outdir=${SEXTANT_RESULTS_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}/results}/$cluster/$SLURM_JOB_ID
mkdir -p "$outdir"
command -v "$SEXTANT_BIN" >/dev/null || { echo "sextant job: SEXTANT_BIN '$SEXTANT_BIN' is not an executable" >&2; exit 1; }

# The job's provenance beside its results (each results file also records the
# SLURM_JOB* layout in /meta/environment).
{
  echo "job_id=$SLURM_JOB_ID"
  echo "job_name=${SLURM_JOB_NAME:-}"
  echo "cluster=$cluster"
  echo "partition=${SLURM_JOB_PARTITION:-}"
  echo "account=${SLURM_JOB_ACCOUNT:-}"
  echo "node_list=${SLURM_JOB_NODELIST:-}"
  echo "nodes=$nodes"
  echo "ntasks=$ntasks"
  echo "tasks_per_node=${SLURM_TASKS_PER_NODE:-}"
  echo "cpus_per_node=${SLURM_JOB_CPUS_PER_NODE:-}"
  echo "submit_dir=${SLURM_SUBMIT_DIR:-}"
  echo "site_env=$site_env"
  echo "launcher=$SEXTANT_LAUNCHER"
  echo "sextant_bin=$SEXTANT_BIN"
  echo "sextant_version=$("$SEXTANT_BIN" --version 2>&1 || true)"
  echo "start_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$outdir/job.txt"
scontrol show job -d "$SLURM_JOB_ID" >"$outdir/scontrol-job.txt" 2>&1 || true
finish() {
  local rc=$?
  { echo "exit_status=$rc"; echo "end_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; } >>"$outdir/job.txt"
  echo "sextant job: exit status $rc; results in $outdir" >&2
}
trap finish EXIT

# launch CMD...: CMD on every task of the allocation, through srun or mpiexec.
launch() {
  local extra
  case $SEXTANT_LAUNCHER in
    srun) read -ra extra <<<"$SEXTANT_SRUN_ARGS"
          set -- srun "${extra[@]}" --nodes="$nodes" --ntasks="$ntasks" --ntasks-per-node="$per_node" "$@" ;;
    mpiexec) read -ra extra <<<"$SEXTANT_MPIEXEC_ARGS"
             set -- "$SEXTANT_MPIEXEC" -n "$ntasks" -ppn "$per_node" "${extra[@]}" "$@" ;;
    *) echo "sextant job: SEXTANT_LAUNCHER '$SEXTANT_LAUNCHER': use srun or mpiexec" >&2; return 2 ;;
  esac
  echo "step=$*" >>"$outdir/job.txt"
  echo "+ $*" >&2
  "$@"
}

# Script arguments go to every `sextant run` too: sbatch THIS_SCRIPT --quick
for suite in "${suites[@]}"; do
  launch "$SEXTANT_BIN" run --suite "$suite" -o "$outdir/$suite.h5" "${site_run_args[@]}" "${run_args[@]}" "$@" \
    2>&1 | tee "$outdir/$suite.log"
done
for suite in "${suites[@]}"; do
  "$SEXTANT_BIN" fit "$outdir/$suite.h5" -o "$outdir/$suite.model.h5"
done
)BODY";

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
  for (const auto& w : split_words(a.run_args)) {
    if (w == "-o" || w.rfind("--output", 0) == 0 || w.rfind("--suite", 0) == 0 || (w.size() > 2 && w.rfind("-o", 0) == 0))
      throw UsageError("--run-args: '" + w + "' is set by the job script (one results file per suite)");
    run_words += (run_words.empty() ? "" : " ") + shell_quote(w);
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
