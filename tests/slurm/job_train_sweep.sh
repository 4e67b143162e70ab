#!/usr/bin/env bash
# jobscripts/train-sweep.sbatch: this sextant has no train suite, so the job must fail
# cleanly with sextant's own message, not pretend. (Update this test when the train
# suite lands: then the job must complete with train-n1.h5 and its model.)
# Usage: job_train_sweep.sh POINTER SEXTANT
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/slurm_lib.sh" "$1" "$2"

submit_wait 1 "$jobscripts/submit" --site-env "$site_env" --parsable --wait --output="$work/job-%j.out" \
  --nodes=1 --ntasks-per-node=2 "$jobscripts/train-sweep.sbatch"
[ "$(job_state "$job")" = "FAILED 1:0" ] || fail "job $job: $(job_state "$job"), expected FAILED 1:0"
joblog=$(cat "$log")
contains "$joblog" "sextant run --suite train is not implemented yet"
contains "$joblog" "step 'sextant run --suite train' on 1 node(s) x 2 failed with exit status 1"
contains "$(cat "$results/job.txt")" "exit_status=1"
[ ! -e "$results/train-n1.model.h5" ] || fail "a model was fitted although the suite failed"
echo "train-sweep job $job: failed cleanly as it must"
