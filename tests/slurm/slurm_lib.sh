# Helpers for the tests that submit jobs to the throw-away Slurm of cluster.sh.
# Usage: source slurm_lib.sh POINTER_FILE SEXTANT  (after ../lib.sh)
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (the Slurm test cluster runs as root)"; exit 77; fi
pointer=$1 sextant=$2
[ -f "$pointer" ] && [ -f "$(cat "$pointer")/env" ] ||
  fail "no Slurm test cluster running (did slurm.cluster.start fail? pointer $pointer)"
# shellcheck disable=SC1090
source "$(cat "$pointer")/env"
jobscripts=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../jobscripts" && pwd)

# A site environment file as a user would write one, for this cluster.
site_env=$work/site.env
cat >"$site_env" <<SITE
: "\${SEXTANT_PARTITION:=$TEST_SLURM_PARTITION}"
: "\${SEXTANT_TIME:=00:05:00}"
: "\${SEXTANT_BIN:=$sextant}"
: "\${SEXTANT_RESULTS_ROOT:=$work/results}"
source "$jobscripts/site.env"
SITE

# submit_wait WANT_RC SBATCH_COMMAND...: runs it with --parsable --wait (under a
# timeout), sets $job (id), $log (the job's output) and $results (its results dir).
submit_wait() {
  local want=$1; shift
  expect_rc "$want" timeout 280 "$@"
  job=$(tail -n 1 <<<"$out" | cut -d';' -f1)
  [[ $job =~ ^[0-9]+$ ]] || fail "no job id from sbatch: $out $err"
  log=$work/job-$job.out
  results=$work/results/$TEST_SLURM_CLUSTER/$job
  echo "job $job exited $rc (as expected); log $log"
}

# job_state JOB: "STATE EXIT_CODE" from the jobcomp/filetxt record of the finished job.
job_state() {
  local line=""
  for _ in $(seq 1 50); do
    line=$(grep "^JobId=$1 " "$TEST_SLURM_JOBCOMP" 2>/dev/null || true)
    [ -z "$line" ] || break
    sleep 0.1
  done
  [ -n "$line" ] || fail "job $1 has no record in $TEST_SLURM_JOBCOMP"
  sed -E 's/.* JobState=([A-Z_]+) .* ExitCode=([0-9]+:[0-9]+).*/\1 \2/' <<<"$line"
}

# On failure, the logs of the jobs this test submitted (measurement rows left out).
show_logs() {
  local f
  for f in "$work"/job-*.out; do
    [ -f "$f" ] || continue
    echo "--- job log $f"
    grep -vE '^ +[0-9]|^\[comm' "$f" | tail -n 60
  done
}
trap 'rc=$?; [ "$rc" -eq 0 ] || show_logs; rm -rf "$work"' EXIT
