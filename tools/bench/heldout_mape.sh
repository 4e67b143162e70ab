#!/usr/bin/env bash
# Benchmark (not a test): held-out accuracy of the piecewise Hockney fits on this
# machine's shared-memory results. Measures a dense sweep (FACTOR, default 2^(1/4)) on
# 2 ranks, fits every other size (so the fit sees a sweep sqrt 2 apart, as the
# validation tests use) and prints the mean absolute % error on the sizes left out,
# split at 64 KiB (`sextant fit --holdout`).
#   tools/bench/heldout_mape.sh [RESULTS.h5] [extra sextant run options]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sextant=${SEXTANT:-$here/../../build/release/tools/sextant}
out=${1:-$(mktemp -d)/heldout.h5}; shift || true
benchmarks=${BENCHMARKS:-pingpong,bandwidth,allreduce,allgather,reduce_scatter,alltoall,bcast,reduce,reduce_local}
if [ ! -f "$out" ]; then
  timeout 900 mpiexec.mpich -n 2 "$sextant" run --suite comm -m 1:16M -f "${FACTOR:-1.18920712}" --budget 1 --precision 0.01 \
    -i 4000 --collectives "$benchmarks" -o "$out" "$@" >/dev/null
fi
echo "results: $out"
"$sextant" fit "$out" --holdout
