#!/usr/bin/env bash
# Benchmark (not a test): sextant's Kokkos kernels side by side with established
# implementations in one run, same thread count on both sides, printing the ratios:
#   STREAM triad vs a plain OpenMP triad (goal >= 0.95), GEMM vs OpenBLAS sgemm/dgemm
#   (goal >= 0.6), the peak-FLOP kernel vs OpenBLAS's best GEMM rate (goal >= 1.05).
#   tools/bench/compute_yardsticks.sh [--quick] [--stream-bytes N]
# THREADS (default: all CPUs) sets OpenMP, Kokkos and OpenBLAS threads alike; BUILD_DIR
# (default build/release) is where the native build's sextant_yardsticks is built. By
# default the native build runs and, where the CPU has AVX-512, the x86-64-v3 (AVX2)
# build after it (CMake preset x86-64-v3, in build/x86-64-v3): two ISAs side by side.
# ISA=native|x86-64-v3|x86-64-v4 runs that one only.
#
# The reference must be the best the vendor library does on this CPU: an OpenBLAS
# older than the CPU falls back to a generic core (e.g. "Prescott", SSE3 kernels, a
# quarter of an AVX-512 core). Unless OPENBLAS_CORETYPE is set, it is set here to the
# newest kernel family the CPU's flags allow (SkylakeX for AVX-512, Haswell for AVX2),
# or to the ISA=x86-64-v3 build's own (Haswell); the table's first line names the core
# OpenBLAS ran.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
threads=${THREADS:-$(nproc)}
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)

# run_isa ISA [args]: builds (if needed) and runs one ISA's yardsticks.
run_isa() {
  local isa=$1 build coretype=${OPENBLAS_CORETYPE:-}
  shift
  build=${BUILD_DIR:-$root/build/release}
  if [ "$isa" != native ]; then   # the CMake preset of that name
    build=$root/build/$isa
    [ -f "$build/CMakeCache.txt" ] || (cd "$root" && cmake --preset "$isa" \
      -DKokkos_ROOT="$("$root/scripts/setup" --print-kokkos-root)" \
      -DKokkosKernels_ROOT="$("$root/scripts/setup" --print-kokkos-kernels-root)" >&2)
  fi
  cmake --build "$build" --target sextant_yardsticks -j"$(nproc)" >&2
  if [ -z "$coretype" ]; then
    if [ "$isa" = x86-64-v3 ]; then coretype=Haswell   # the same ISA on both sides
    elif grep -qw avx512f <<<"$flags"; then coretype=SkylakeX
    elif grep -qw avx2 <<<"$flags"; then coretype=Haswell
    fi
  fi
  # (an empty OPENBLAS_CORETYPE is not the same as none: OpenBLAS then detects otherwise)
  env ${coretype:+OPENBLAS_CORETYPE=$coretype} OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
    OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads} \
    "$build/tools/bench/sextant_yardsticks" "$@"
}

if [ -n "${ISA:-}" ]; then
  run_isa "$ISA" "$@"
else
  run_isa native "$@"
  # A CPU with AVX-512 runs the AVX2 build too: two ISAs side by side, one run.
  if grep -qw avx512f <<<"$flags"; then echo; run_isa x86-64-v3 "$@"; fi
fi
