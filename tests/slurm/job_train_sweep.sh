#!/usr/bin/env bash
# jobscripts/train-sweep.sbatch: the training-proxy sweep completes under Slurm, writes
# train-n1.h5 with the predicted-vs-measured table and fits its model.
# Usage: job_train_sweep.sh POINTER SEXTANT PYTHON
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/slurm_lib.sh" "$1" "$2"
python=$3 here=$(dirname "$0")

submit_wait 0 "$jobscripts/submit" --site-env "$site_env" --parsable --wait --output="$work/job-%j.out" \
  --nodes=1 --ntasks-per-node=2 "$jobscripts/train-sweep.sbatch" --quick --configs dp2.small,pp_1f1b2.small
[ "$(job_state "$job")" = "COMPLETED 0:0" ] || fail "job $job: $(job_state "$job"), expected COMPLETED 0:0"
contains "$(cat "$results/job.txt")" "exit_status=0"
[ -f "$results/train-n1.h5" ] && [ -f "$results/train-n1.model.h5" ] || fail "no train results or model"
contains "$(cat "$results/train-n1.log")" "median |error|"
"$python" "$here/check_meta.py" "$results/train-n1.h5" "env:SLURM_JOB_ID=$job" "meta:suite=train" \
  has:/train/dp2.small has:/train/pp_1f1b2.small has:/compute/kernels has:/comm/world/allreduce/float32/p2
echo "train-sweep job $job: completed"
