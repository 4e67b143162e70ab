#!/usr/bin/env bash
# jobscripts/comm-scaling.sbatch: one allocation (1 node x 3 tasks here), one srun step
# per layout (2 and 3 ranks per node), each series merged and fitted.
# Usage: job_comm_scaling.sh POINTER SEXTANT PYTHON
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/slurm_lib.sh" "$1" "$2"
python=$3 here=$(dirname "$0")

SEXTANT_SWEEP_RANKS_PER_NODE="2 3" submit_wait 0 "$jobscripts/submit" --site-env "$site_env" --parsable --wait \
  --output="$work/job-%j.out" --nodes=1 --ntasks-per-node=3 "$jobscripts/comm-scaling.sbatch" \
  --quick --collectives allreduce,pingpong
[ "$(job_state "$job")" = "COMPLETED 0:0" ] || fail "job $job: $(job_state "$job"), expected COMPLETED 0:0"

jobtxt=$(cat "$results/job.txt")
contains "$jobtxt" "sweep_ranks_per_node=2 3"
for r in 2 3; do
  contains "$jobtxt" "step=srun --mpi=pmi2 --nodes=1 --ntasks=$r --ntasks-per-node=$r"
  for f in comm-n1-r$r.h5 comm-r$r.h5 comm-r$r.model.h5; do [ -f "$results/$f" ] || fail "missing $results/$f"; done
  "$python" "$here/check_meta.py" "$results/comm-n1-r$r.h5" "env:SLURM_JOB_ID=$job" "env:SLURM_NTASKS=$r" "meta:ranks=$r"
  "$python" "$here/check_meta.py" "$results/comm-r$r.h5" "meta:merged_from=$results/comm-n1-r$r.h5" \
    "source:0:env:SLURM_JOB_ID=$job" "source:0:file=$results/comm-n1-r$r.h5" has:/comm/world/allreduce/float32/p$r
  expect_rc 0 "$sextant" predict "$results/comm-r$r.model.h5"
  contains "$out" "allreduce  level=world  dtype=float32  ranks=$r"
done
echo "comm-scaling job $job: ok"
