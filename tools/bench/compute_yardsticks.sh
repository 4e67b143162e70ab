#!/usr/bin/env bash
# Benchmark (not a test): sextant's Kokkos kernels side by side with established
# implementations in one run, same thread count on both sides, printing the ratios:
#   STREAM triad vs a plain OpenMP triad (goal >= 0.95), GEMM vs OpenBLAS sgemm/dgemm
#   (goal >= 0.5), the peak-FLOP kernel vs OpenBLAS's best GEMM rate (goal >= 1.0).
#   tools/bench/compute_yardsticks.sh [--quick] [--stream-bytes N]
# THREADS (default: all CPUs) sets OpenMP, Kokkos and OpenBLAS threads alike; BUILD_DIR
# (default build/release) is where the sextant_yardsticks target is built.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build/release}
threads=${THREADS:-$(nproc)}
cmake --build "$build" --target sextant_yardsticks -j"$(nproc)" >&2
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
exec "$build/tools/bench/sextant_yardsticks" "$@"
