#!/usr/bin/env bash
# comm_run.sh SEXTANT PYTHON RANKS OUT.h5 [check_results options --] [sextant run options]
# Runs the comm suite under mpiexec.mpich and checks the file with h5py alone; whether
# the run must be flagged oversubscribed follows from this host's CPUs (lib.sh).
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2 ranks=$3 output=$4; shift 4
checks=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do checks+=("$1"); shift; done
[ $# -gt 0 ] && shift
want=0 late=0
for c in "${checks[@]}"; do [ "$c" = "--wrong" ] && want=1; done
for c in "${checks[@]}"; do [ "$c" = "--late-rank" ] && late=1; done
for c in "${checks[@]}"; do [ "$c" = "--widened" ] && late=0; done
[ $late = 1 ] && want=1
mkdir -p "$(dirname "$output")"
start=$(date +%s)
expect_rc $want timeout 280 mpiexec.mpich -n "$ranks" "$sextant" run --suite comm --overwrite -o "$output" "$@"
# head reads from the file: piping a long table into head under pipefail fails
# the test whenever head exits before the writer is done (SIGPIPE).
echo "$out" >"$work/table.txt"
head -40 "$work/table.txt"
echo "elapsed $(( $(date +%s) - start )) s"
if [ "$(oversubscribed "$sextant" "$ranks")" = 1 ]; then
  contains "$err" "oversubscribed, timings are not meaningful"
  checks+=(--oversubscribed)
fi
if [ $late = 1 ]; then
  contains "$err" "sizes could not be measured: stored as missing"
  # fit leaves the missing sizes out and says so; with nothing left it fails
  expect_rc 1 "$sextant" fit "$output" -o "$work/late.model.h5"
  contains "$err" "sizes not measured, left out (0 of"
elif [ $want = 1 ]; then contains "$err" "WRONG rank"; contains "$err" "validation FAILED"; fi
"$python" "$(dirname "$0")/check_results.py" "$output" --ranks "$ranks" --table "$work/table.txt" "${checks[@]}"
