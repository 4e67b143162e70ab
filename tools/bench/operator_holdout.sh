#!/usr/bin/env bash
# Benchmark (not a test): held-out accuracy of the calibrated operator models. The
# train suite measures every kernel of its sweep at the many shapes the configurations
# execute (2 ranks, caches flushed before each run); `sextant fit --holdout` fits each
# kernel variant on every other shape (by size) and prints the error on the others.
# (The compute suite's own shape sets have 1-3 shapes per kernel: too few to hold out.)
#   tools/bench/operator_holdout.sh [RESULTS.h5]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sextant=${SEXTANT:-$here/../../build/release/tools/sextant}
out=${1:-$(mktemp -d)/operators.h5}
if [ ! -f "$out" ]; then
  timeout 900 mpiexec.mpich -n 2 "$sextant" run --suite train --quick --overwrite -o "$out" >/dev/null
fi
echo "results: $out"
"$sextant" fit "$out" --holdout | sed -n '/operator models/,$p'
