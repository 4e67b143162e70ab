#!/usr/bin/env bash
# `sextant jobscript` without a cluster: a 4 node x 8 rank script passes `bash -n`
# and carries the right #SBATCH lines; options are validated (exit 2, naming the
# option); the site file supplies partition/account/time defaults. The job scripts
# of jobscripts/ parse too.
# Usage: jobscript_generate.sh SEXTANT JOBSCRIPTS_DIR
source "$(dirname "$0")/../lib.sh"
sextant=$1 jobscripts=$2

sbatch_lines() { grep '^#SBATCH' "$1"; }

expect_rc 0 "$sextant" jobscript --nodes 4 --ranks-per-node 8 --suites comm,compute --time 02:30:00 \
  --partition batch --account proj42 --run-args "--quick --collectives allreduce,allgather" -o "$work/big.sbatch"
contains "$err" "wrote $work/big.sbatch"
[ -x "$work/big.sbatch" ] || fail "generated script is not executable"
[ ! -e "$work/big.sbatch.tmp" ] || fail "temporary file left"
bash -n "$work/big.sbatch" || fail "generated script does not parse"
[ "$(head -n 1 "$work/big.sbatch")" = "#!/bin/bash" ] || fail "no #!/bin/bash line"
want='#SBATCH --job-name=sextant-comm-compute
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=8
#SBATCH --time=02:30:00
#SBATCH --partition=batch
#SBATCH --account=proj42
#SBATCH --output=sextant-%x-%j.out'
[ "$(sbatch_lines "$work/big.sbatch")" = "$want" ] || fail "#SBATCH lines: $(sbatch_lines "$work/big.sbatch")"
script=$(cat "$work/big.sbatch")
contains "$script" "set -euo pipefail"
contains "$script" "suites=(comm compute)"
contains "$script" "run_args=('--quick' '--collectives' 'allreduce,allgather')"
contains "$script" 'SEXTANT_RANKS_PER_NODE=8'
# The job is jobscripts/common.sh's (what the checked-in scripts source too).
common=$(sed -n "s/^common='\(.*\)'$/\1/p" "$work/big.sbatch")
[ "$common" -ef "$jobscripts/common.sh" ] || fail "the script sources '$common', not $jobscripts/common.sh"
contains "$script" 'sextant_run_suite "$suite" "$nodes" "$per_node" "$outdir/$suite.h5" "${run_args[@]}" "$@"'
contains "$script" 'sextant_fit "$outdir/$suite.h5" "$outdir/$suite.model.h5"'
# Nothing runs outside a job: the script says so and fails.
expect_rc 1 env -u SLURM_JOB_NUM_NODES bash "$work/big.sbatch"
contains "$err" "not inside a Slurm job"

# Standard output, defaults: no partition/account lines, one hour, job name from the suites.
expect_rc 0 "$sextant" jobscript --nodes 2 --ranks-per-node 1
bash -n <<<"$out" || fail "stdout script does not parse"
contains "$out" "#SBATCH --time=01:00:00"
contains "$out" "#SBATCH --job-name=sextant-comm"
if grep -qE '^#SBATCH --(partition|account)' <<<"$out"; then fail "partition/account without being asked"; fi

# The site file gives partition, account and time unless the options do.
cat >"$work/site.env" <<'SITE'
: "${SEXTANT_PARTITION:=sitepart}"
: "${SEXTANT_ACCOUNT:=siteacct}"
: "${SEXTANT_TIME:=00:20:00}"
SITE
expect_rc 0 "$sextant" jobscript --site-env "$work/site.env" --partition cli
contains "$out" "#SBATCH --partition=cli"
contains "$out" "#SBATCH --account=siteacct"
contains "$out" "#SBATCH --time=00:20:00"
contains "$out" "SEXTANT_SITE_ENV=\${SEXTANT_SITE_ENV:-'$work/site.env'}"
bash -n <<<"$out" || fail "script with site env does not parse"

# Usage errors name the option.
check_usage() { local opt=$1; shift; expect_rc 2 "$sextant" jobscript "$@"; contains "$err" "$opt"; }
check_usage --nodes --nodes 0
check_usage --ranks-per-node --ranks-per-node 0
check_usage --suites --suites comm,bogus
check_usage --suites --suites ,
check_usage --time --time 5
check_usage --time --time 01:75:00
check_usage --partition --partition "a b"
check_usage --account --account 'x;rm'
check_usage --site-env --site-env "$work/nosuch.env"
check_usage --run-args --run-args "--quick -o elsewhere.h5"
check_usage --run-args --run-args "--suite train"
expect_rc 2 "$sextant" jobscript --nodes four
expect_rc 0 "$sextant" jobscript --help
contains "$out" "--ranks-per-node"

# The hand-written job scripts and their helpers parse.
for f in "$jobscripts"/*.sbatch "$jobscripts"/common.sh "$jobscripts"/submit "$jobscripts"/site.env; do
  bash -n "$f" || fail "$f does not parse"
  case $f in *.sbatch) grep -q '^#SBATCH --time=' "$f" || fail "$f has no #SBATCH --time";; esac
done
expect_rc 0 "$jobscripts/submit" --help
contains "$out" "site"
echo "jobscript: ok"
