#!/usr/bin/env bash
# Benchmark (not a test): held-out accuracy of the calibrated operator models. Measures
# the compute suite's larger shape set on one rank, fits every kernel on every other
# shape (by size) and prints the error on the shapes left out (`sextant fit --holdout`).
#   tools/bench/operator_holdout.sh [RESULTS.h5] [extra sextant run options]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sextant=${SEXTANT:-$here/../../build/release/tools/sextant}
out=${1:-$(mktemp -d)/operators.h5}; shift || true
if [ ! -f "$out" ]; then
  timeout 1800 mpiexec.mpich -n 1 "$sextant" run --suite compute --full-shapes -o "$out" "$@" >/dev/null
fi
echo "results: $out"
"$sextant" fit "$out" --holdout
