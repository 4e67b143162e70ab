#!/usr/bin/env bash
# train_sweep.sh SEXTANT PYTHON OUTDIR DELAY_US RATE
#
# The training proxies' predicted-vs-measured sweep on two networks: 2 ranks on shared
# memory, and 2 ranks on the namespace cluster in $SEXTANT_NETNS_STATE (2 hosts, one-way
# delay DELAY_US, rate RATE), where communication is a large share of the step; the
# three model sizes, the large one compute-dominated, nine strategies (DP, TP, TP with
# sequence parallelism, GPipe, 1F1B, FSDP, DP with bfloat16 gradients, mixture of
# experts with expert parallelism, DP in mixed precision): 27 configurations a network.
# Each run measures its own comm and compute models, fits them and predicts every
# configuration before running it (`sextant run --suite train`); check_train.py then
# judges all 54 together: median |error| <= 12.5%, max <= 35%, and says whether the
# goals, median <= 5% and max <= 15%, were met (eight runs of the two small sizes:
# median 4.7-10.5%, max 15-27%; see check_train.py).
#
# This machine is shared: for minutes at a time it runs at up to ~1.35x its usual time
# per operator (one vCPU or both; no steal time is recorded). Each configuration's
# kernels and partners' wait are measured again just before its steps and it is
# predicted from them (docs/train-suite.md), so the machine's speed does not move the
# judged errors; the collectives are measured once, before the sweep. The namespace
# network's collectives are the larger part of its steps and its delay lines share the
# CPUs, so that run also measures them again after the sweep (its "comm drift"; in one
# run of this test a try ran tp2.large at 1.4x its other tries' time), and is run again
# while that is more than 10% off 1, up to 2 runs in all where the time allows (a host
# ~1.5x faster than this one; below); the one with the drift nearest 1 is judged,
# whatever its errors (the limits are not touched). Shared memory runs once: its
# collectives are a small share of its steps (4-34%), and their time moves 2-3x between
# launches of the same command on this machine, which a rerun would chase without end.
# Files: OUTDIR/train_shm.h5, OUTDIR/train_net.h5 (and their .model.h5, .out).
set -euo pipefail
[ $# -eq 5 ] || { echo "usage: $0 SEXTANT PYTHON OUTDIR DELAY_US RATE" >&2; exit 2; }
sextant=$1 python=$2 out=$3 delay_us=$4 rate=$5
source "$(dirname "$0")/netns/test_prelude.sh"
netns_test_prelude "the train sweep on the namespace network" "$out"
rm -f "$out"/train_{shm,net}.{h5,model.h5,out}

# The time it may take: ctest stops the test at 1200 s (tests/validation/CMakeLists.txt);
# what runs after the two networks (the statistics, the judging) takes seconds. Each run
# has its own limit besides, so that a hung run is named: 450 s on shared memory and
# 800 s across the namespaces, against ~270 s and ~490 s on the host they were sized on
# (a CI host ran its tests 1.25x slower; each configuration's kernels, measured before
# and after its steps, take ~4 s of it). A second try runs only while the time left
# holds 1.3x the first: here it no longer does.
deadline=1140  # seconds since this script started
timed() {  # LABEL COMMAND...: run, keep the output, say how long it took
  local label=$1; shift
  local start; start=$(date +%s.%N)
  "$here/netns/cpu_busy.sh" "train sweep, $label"
  local rc=0
  "$@" >"$out/train_$label.out" 2>&1 || rc=$?
  local took; took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  if [ "$rc" -ne 0 ]; then
    tail -25 "$out/train_$label.out"
    echo "FAIL: train sweep, $label: exit $rc after $took s" >&2
    exit 1
  fi
  # Where the time went, the table and the drift lines only: the collectives measured
  # again after the sweep stay in the .out file (a failing run's log must show its
  # verdict within its first lines).
  awk '/^sextant: (train suite:|partners|a message)/ || /^comm drift/ { print; next }
       /^# training proxy/ { on = 1 }
       on && !/^\[/ && !/^#? *[0-9]/ && !/^# (bytes|[a-z_]+~isolated)/ { print }
       /^operator drift/ { on = 0 }' "$out/train_$label.out"
  echo "train sweep, $label: $took s"
}
steady() {  # LABEL DRIFT_OF TRIES LIMIT RUN: RUN LIMIT FILE, until the drift is within 10%
  local label=$1 drift_of=$2 tries=$3 limit=$4 run=$5
  local try best="" best_off="" last=0
  for ((try = 1; try <= tries; try++)); do
    local left=$((deadline - SECONDS))
    if [ "$try" -gt 1 ] && [ $((last * 13 / 10)) -gt "$left" ]; then
      echo "train sweep, $label: no time for try $try (the last took $last s, $left s left)"
      break
    fi
    [ "$left" -lt "$limit" ] && limit=$left
    rm -f "$out/train_$label".{h5,model.h5}
    local began=$SECONDS
    timed "$label" "$run" "$limit" "$out/train_$label.h5"
    last=$((SECONDS - began))
    local line off rc
    line=$("$python" "$here/check_train.py" --drift "$out/train_$label.h5" --drift-tolerance 0.10 --drift-of "$drift_of") && rc=0 || rc=$?
    echo "train sweep, $label, try $try: $line"
    [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || { echo "FAIL: train sweep, $label: no $drift_of drift recorded" >&2; exit 1; }
    off=$(sed -n 's/.*: drift \([0-9.]*\)x.*/\1/p' <<<"$line" | awk '{ d = $1 - 1; print d < 0 ? -d : d }')
    if [ -z "$best" ] || awk -v a="$off" -v b="$best_off" 'BEGIN { exit !(a < b) }'; then
      best=$try best_off=$off
      for f in h5 model.h5 out; do cp "$out/train_$label.$f" "$out/train_$label.best.$f"; done
    fi
    [ "$rc" -eq 0 ] && break
  done
  for f in h5 model.h5 out; do mv "$out/train_$label.best.$f" "$out/train_$label.$f"; done
  echo "train sweep, $label: judging try $best"
}
sweep=(run --suite train --quick --model-sizes small,medium,large -o)
# Shared memory: 2 ranks on this machine's 2 CPUs, one thread each (the default).
on_shm() { timeout --kill-after=10 "$1" mpiexec.mpich -n 2 "$sextant" "${sweep[@]}" "$2"; }
# The namespace network: one rank per host, each pinned to its own CPU by the cluster
# (so one thread per rank).
on_net() { "$cluster" mpiexec --timeout "$1" "$sextant" "${sweep[@]}" "$2"; }
steady shm operator 1 450 on_shm
steady net comm 2 800 on_net
"$cluster" stats || true  # how late the delay lines released packets during the runs

"$python" "$here/check_train.py" "shared memory=$out/train_shm.h5" \
  "namespaces ${delay_us}us ${rate}=$out/train_net.h5" --min-configs 54 --median 12.5 --max 35 \
  --goal-median 5 --goal-max 15
