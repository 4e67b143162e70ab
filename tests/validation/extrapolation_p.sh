#!/usr/bin/env bash
# extrapolation_p.sh SEXTANT PYTHON OUTDIR [COLLECTIVES] [SIZES]
#
# Held-out extrapolation in the rank count, on the namespace cluster in
# $SEXTANT_NETNS_STATE (4 hosts): measure the collectives at 2 ranks and fit them,
# then measure them at 3 and 4 ranks (held out) and print measured times next to
# what the 2-rank model predicts (`sextant predict --ranks P`) with the error per
# collective. Each collective is measured with the MPI library's own choice and with
# each of its algorithms that has a cost formula forced (run --algorithms): the model
# knows which the library ran at 2 ranks, and every forced one is predicted at 3 and 4
# from its own formula. The accuracy is informational (extrapolation in p is the scale
# work's); it fails when a run or the fit fails, a held-out size was not measured, or
# `predict` gives no time for one (extrapolation_report.py).
# Files: OUTDIR/extrap_p{2,3,4}.h5 (and .out, the tables), OUTDIR/extrap_p2.model.h5.
# SEXTANT_EXTRAP_SYNC=barrier measures with barrier synchronisation instead of window.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 SEXTANT PYTHON OUTDIR [COLLECTIVES] [SIZES]" >&2; exit 2; }
sextant=$1 python=$2 out=$3
collectives=${4:-pingpong,allreduce,allgather,bcast,reduce_scatter}
sizes=${5:-8:32K}
# MPICH's names of the non-blocking collectives' algorithms that sextant has cost
# formulas for (models/collectives.cpp; the yielding waits run the non-blocking form).
algorithms=${SEXTANT_EXTRAP_ALGORITHMS:-sched_recursive_doubling,sched_reduce_scatter_allgather,sched_ring,tsp_ring,sched_brucks,sched_binomial,sched_scatter_recursive_doubling_allgather,sched_recursive_halving,sched_pairwise}
source "$(dirname "$0")/netns/test_prelude.sh"
netns_test_prelude "extrapolation in p" "$out"
echo "extrapolation in p: hosts $("$cluster" hosts)"
"$here/netns/cpu_busy.sh" "extrapolation in p"
for p in 2 3 4; do
  rm -f "$out/extrap_p$p.h5"
  start=$(date +%s.%N)
  # One rank per host. More hosts than CPUs: --wait yield, so that a waiting rank
  # gives its CPU to the one that has work (busy polling would starve it); sextant
  # cannot see it (each host has its own CPU). The collectives then run in their
  # non-blocking form, whose algorithms are the ones forced. --sync window: after a
  # barrier, ranks leave it up to one network latency apart, which at 200 us distorts
  # collective times (bcast at 3 ranks read 100 us, below the one-way latency).
  "$cluster" mpiexec --timeout 240 -n $p "$sextant" run --suite comm --collectives "$collectives" \
    --dtypes float32 -m "$sizes" -f 4 --sync "${SEXTANT_EXTRAP_SYNC:-window}" -x 2 -i 50 --budget 0.5 --precision 0.05 \
    --wait yield --algorithms "$algorithms" -o "$out/extrap_p$p.h5" >"$out/extrap_p$p.out"
  echo "p=$p: measured in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s"
done
"$sextant" fit "$out/extrap_p2.h5" -o "$out/extrap_p2.model.h5"
"$python" "$here/extrapolation_report.py" "$sextant" "$out/extrap_p2.model.h5" "$out/extrap_p2.h5" \
  "$out/extrap_p3.h5" "$out/extrap_p4.h5"
