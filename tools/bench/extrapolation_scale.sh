#!/usr/bin/env bash
# Benchmark (not a test; ~20 min at 2 ms): extrapolation in p on 8 namespace hosts. One
# launch of 4 ranks measures every collective at p = 2, 3, 4 with the MPI library's own
# choice and each of its algorithms that has a cost formula forced; `fit` models them;
# one launch of 8 ranks measures p = 5..8 (the library's choice, and the pairwise
# alltoall as the rig's load gauge); extrapolation_report.py prints the predictions of
# the p <= 4 model beside the measurements, the rig's load (the pairwise alltoall's time
# per step over the 2-rank ping-pong: where it passes 1.10, the hosts' shared CPUs, not
# the injected network, decide the time) and the median |error| per collective and p.
#   tools/bench/extrapolation_scale.sh DELAY_US|random RATE|random [OUTDIR] [SEED]
# `random` draws the one-way delay from 500..3000 us and the rate from 100 Mbit/s..1
# Gbit/s (SEED, default the time; the draw is printed). Needs root and a release build.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 DELAY_US|random RATE|random [OUTDIR] [SEED]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build/release
out=${3:-$(mktemp -d)}
RANDOM=${4:-$(date +%s)}
delay=$1 rate=$2
[ "$delay" = random ] && delay=$((500 + RANDOM % 2501))
if [ "$rate" = random ]; then rates=(100mbit 200mbit 500mbit 1gbit); rate=${rates[$((RANDOM % 4))]}; fi
mkdir -p "$out"
echo "extrapolation in p: 8 hosts, ${delay} us one-way, ${rate}; files in $out"
export SEXTANT_NETNS_STATE=$out/netns SEXTANT_DELAYLINE=$build/tests/validation/sextant_delayline
export SEXTANT_NODISCONNECT=$build/tests/validation/sextant_ucx_nodisconnect.so
cluster=$root/tests/validation/netns/cluster.sh
sextant=$build/tools/sextant
python=/usr/bin/python3; [ -x "$python" ] || python=python3
"$cluster" up --hosts 8 --delay-us "$delay" --rate "$rate" --spin-us 20 --replace >"$out/up.log" 2>&1
trap '"$cluster" down >>"$out/up.log" 2>&1 || true' EXIT
# More ranks than CPUs: yielding waits, so the collectives run in their non-blocking
# form, whose algorithms are the ones forced; window sync (a barrier's release reaches
# the hosts a latency apart).
common=(run --suite comm --collectives pingpong,bcast,reduce,allreduce,allgather,reduce_scatter,alltoall
        --dtypes float32 -m 8:128K -f 4 --sync window -x 2 -i 50 --budget 0.5 --precision 0.05 --wait yield)
formulas=sched_recursive_doubling,sched_reduce_scatter_allgather,tsp_ring,sched_brucks,sched_binomial
formulas+=,sched_scatter_recursive_doubling_allgather,sched_recursive_halving,sched_pairwise,sched_permuted_sendrecv
"$cluster" mpiexec --timeout 3000 -n 4 "$sextant" "${common[@]}" --ranks 2:4 --algorithms "$formulas" \
  -o "$out/fit.h5" >"$out/fit.out" 2>&1
"$cluster" mpiexec --timeout 3000 -n 8 "$sextant" "${common[@]}" --ranks 5:8 --algorithms sched_pairwise \
  -o "$out/held.h5" >"$out/held.out" 2>&1
"$cluster" stats >"$out/delaylines.txt" 2>&1 || true
"$sextant" fit "$out/fit.h5" -o "$out/fit.model.h5" >"$out/fit.log"
# The forced algorithms measured at p <= 4 only are reported as not measured at 5..8.
"$python" "$root/tests/validation/extrapolation_report.py" "$sextant" "$out/fit.model.h5" "$out/fit.h5" \
  "$out/held.h5" >"$out/report.txt" || true
sed -n "/^the rig's load/,/^held-out/p" "$out/report.txt" | sed '$d'
sed -n '/^median |error| over sizes/,/^FAIL/p' "$out/report.txt" | grep -v '^FAIL' | grep -v ' -  *-  *-  *-$'
