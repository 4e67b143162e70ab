#!/usr/bin/env bash
# Benchmark (not a test): sextant's Kokkos kernels side by side with established
# implementations in one run, same thread count on both sides, printing the ratios:
#   STREAM triad vs a plain OpenMP triad (goal >= 0.95), GEMM vs OpenBLAS sgemm/dgemm
#   (goal >= 0.6), the peak-FLOP kernel vs OpenBLAS's best GEMM rate (goal >= 1.05).
#   tools/bench/compute_yardsticks.sh [--quick] [--stream-bytes N]
# THREADS (default: all CPUs) sets OpenMP, Kokkos and OpenBLAS threads alike; BUILD_DIR
# (default build/release) is where the sextant_yardsticks target is built; ISA
# (x86-64-v3, x86-64-v4: the CMake presets) builds and runs that ISA's build in
# build/ISA instead. Run it once per ISA the CPU has to see them side by side.
#
# The reference must be the best the vendor library does on this CPU: an OpenBLAS
# older than the CPU falls back to a generic core (e.g. "Prescott", SSE3 kernels, a
# quarter of an AVX-512 core). Unless OPENBLAS_CORETYPE is set, it is set here to the
# newest kernel family the CPU's flags allow (SkylakeX for AVX-512, Haswell for AVX2),
# or to the ISA=x86-64-v3 build's own (Haswell); the table's first line names the core
# OpenBLAS ran.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build/release}
if [ -n "${ISA:-}" ] && [ "$ISA" != native ]; then   # the CMake preset of that name
  build=$root/build/$ISA
  [ -f "$build/CMakeCache.txt" ] || (cd "$root" && cmake --preset "$ISA" \
    -DKokkos_ROOT="$("$root/scripts/setup" --print-kokkos-root)" >&2)
fi
threads=${THREADS:-$(nproc)}
cmake --build "$build" --target sextant_yardsticks -j"$(nproc)" >&2
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
  if [ "${ISA:-}" = x86-64-v3 ]; then export OPENBLAS_CORETYPE=Haswell   # the same ISA on both sides
  elif grep -qw avx512f <<<"$flags"; then export OPENBLAS_CORETYPE=SkylakeX
  elif grep -qw avx2 <<<"$flags"; then export OPENBLAS_CORETYPE=Haswell
  fi
fi
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
exec "$build/tools/bench/sextant_yardsticks" "$@"
