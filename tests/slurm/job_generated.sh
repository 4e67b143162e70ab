#!/usr/bin/env bash
# Scripts from `sextant jobscript` under a real Slurm: one that runs (mpiexec.mpich
# inside the allocation this time), and one whose `sextant run` options only the compute
# node can refuse (buffers larger than its memory), which must end FAILED with sextant's
# message in the job log. Options that are wrong anywhere are refused by jobscript itself.
# Usage: job_generated.sh POINTER SEXTANT PYTHON
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/slurm_lib.sh" "$1" "$2"
python=$3 here=$(dirname "$0")

expect_rc 0 "$sextant" jobscript --nodes 1 --ranks-per-node 2 --site-env "$site_env" --log "$work/job-%j.out" \
  --run-args "--quick --collectives allreduce,pingpong" -o "$work/good.sbatch"
bash -n "$work/good.sbatch"
grep -qx "#SBATCH --partition=$TEST_SLURM_PARTITION" "$work/good.sbatch" || fail "partition not taken from the site env"
grep -qx "#SBATCH --time=00:05:00" "$work/good.sbatch" || fail "time not taken from the site env"
SEXTANT_LAUNCHER=mpiexec submit_wait 0 sbatch --parsable --wait "$work/good.sbatch"
[ "$(job_state "$job")" = "COMPLETED 0:0" ] || fail "job $job: $(job_state "$job"), expected COMPLETED 0:0"
contains "$(cat "$results/job.txt")" "step=mpiexec.mpich -n 2 -ppn 2"
"$python" "$here/check_meta.py" "$results/comm.h5" "env:SLURM_JOB_ID=$job" "meta:ranks=2" \
  "env:SEXTANT_LAUNCHER=mpiexec" has:/comm/world/pingpong/byte/p2
expect_rc 0 "$sextant" predict "$results/comm.model.h5"
contains "$out" "pingpong  level=world  dtype=byte  ranks=2"

expect_rc 2 "$sextant" jobscript --nodes 1 --ranks-per-node 2 --site-env "$site_env" --log "$work/job-%j.out" \
  --run-args "--quick --sizes 4M:1" -o "$work/bad.sbatch"
contains "$err" "size range '4M:1': MIN is larger than MAX"
[ ! -e "$work/bad.sbatch" ] || fail "jobscript wrote a script for options run refuses"

# 1 TiB messages: no node has the memory for their buffers, and only the node can tell.
expect_rc 0 "$sextant" jobscript --nodes 1 --ranks-per-node 2 --site-env "$site_env" --log "$work/job-%j.out" \
  --run-args "--quick --collectives allreduce -m 1024G" -o "$work/bad.sbatch"
submit_wait 2 sbatch --parsable --wait "$work/bad.sbatch"
[ "$(job_state "$job")" = "FAILED 2:0" ] || fail "job $job: $(job_state "$job"), expected FAILED 2:0"
joblog=$(cat "$log")
contains "$joblog" "sextant run --suite comm -o $results/comm.h5 --quick --collectives allreduce -m 1024G"
contains "$joblog" "more than 80% of the memory available"
contains "$(cat "$results/job.txt")" "exit_status=2"
[ ! -e "$results/comm.model.h5" ] || fail "a model was fitted although the run failed"
echo "generated jobs $job and before: ok"
