#!/usr/bin/env bash
# train_sweep.sh SEXTANT PYTHON OUTDIR DELAY_US RATE
#
# The training proxies' predicted-vs-measured sweep on two networks: 2 ranks on shared
# memory, and 2 ranks on the namespace cluster in $SEXTANT_NETNS_STATE (2 hosts, one-way
# delay DELAY_US, rate RATE), where communication is a large share of the step. Each
# run measures its own comm and compute models, fits them and predicts every
# configuration before running it (`sextant run --suite train`); check_train.py then
# judges all configurations together: median |error| <= 12.5%, max <= 35%, and says
# whether the goals, median <= 10% and max <= 25%, were met (eight runs of the same
# code: median 4.7-10.5%, max 15-27%; see check_train.py).
# Files: OUTDIR/train_shm.h5, OUTDIR/train_net.h5 (and their .model.h5, .out).
set -euo pipefail
[ $# -eq 5 ] || { echo "usage: $0 SEXTANT PYTHON OUTDIR DELAY_US RATE" >&2; exit 2; }
sextant=$1 python=$2 out=$3 delay_us=$4 rate=$5
source "$(dirname "$0")/netns/test_prelude.sh"
netns_test_prelude "the train sweep on the namespace network" "$out"
rm -f "$out"/train_{shm,net}.{h5,model.h5,out}

timed() {  # LABEL COMMAND...: run, keep the output, say how long it took
  local label=$1; shift
  local start; start=$(date +%s.%N)
  "$here/netns/cpu_busy.sh" "train sweep, $label"
  "$@" >"$out/train_$label.out" 2>&1 || { tail -40 "$out/train_$label.out"; echo "FAIL: train sweep, $label" >&2; exit 1; }
  sed -n '/^# training proxy/,$p' "$out/train_$label.out"
  echo "train sweep, $label: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s"
}
# Shared memory: 2 ranks on this machine's 2 CPUs, one thread each (the default).
timed shm timeout 280 mpiexec.mpich -n 2 "$sextant" run --suite train --quick -o "$out/train_shm.h5"
# The namespace network: one rank per host, each pinned to its own CPU by the cluster
# (so one thread per rank).
timed net "$cluster" mpiexec --timeout 400 "$sextant" run --suite train --quick -o "$out/train_net.h5"
"$cluster" stats || true  # how late the delay lines released packets during the run

"$python" "$here/check_train.py" "shared memory=$out/train_shm.h5" \
  "namespaces ${delay_us}us ${rate}=$out/train_net.h5" --min-configs 12 --median 12.5 --max 35 \
  --goal-median 10 --goal-max 25
