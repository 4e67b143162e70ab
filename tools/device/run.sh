#!/usr/bin/env bash
# GPU check of the kernel layer, run from a folder that holds this script and the
# kernel_check binaries (tools/device/build_cuda.sh puts them in .device/):
#
#   bash .device/run.sh        output in $OUT/kernel_check.txt (or .device/out/)
#
# kernel_check (CUDA build: Kokkos 3.4.01 for sm_90, cudart linked statically) validates
# every registry kernel, every dtype it supports, at its test and quick shapes against
# the serial references, and times the quick shapes. The vendor_* kernels call cuBLAS
# through Kokkos Kernels 3.4.01; libcublas.so.13 is linked shared, so it is taken from a
# CUDA 13 toolkit's lib64 (or python3's nvidia wheels): LD_LIBRARY_PATH is set to the
# first folder that has it, and both binaries' ldd printed first. One process runs
# everything; if it dies (a signal, a CUDA error that aborts), each kernel not finished
# is rerun in a process of its own, so one bad kernel does not hide the others. Bounded
# to SEXTANT_CHECK_SECONDS (default 200) in all.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-$here/out}
mkdir -p "$out"
log=$out/kernel_check.txt
deadline=$((SECONDS + ${SEXTANT_CHECK_SECONDS:-200}))
: >"$log"
say() { echo "$*" | tee -a "$log"; }

say "== nvidia-smi -L"
nvidia-smi -L 2>&1 | tee -a "$log"
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 | tee -a "$log"
say "== host: $(uname -srm); $(ldd --version 2>&1 | head -n 1); $(nproc) CPUs"

# The binaries may arrive without their execute bits: run copies.
bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
cp "$here"/kernel_check "$here"/kernel_check_dyn "$bin_dir"/ && chmod +x "$bin_dir"/kernel_check*

# cuBLAS 13 (shared): a CUDA toolkit's lib64 first, then python3's nvidia wheels.
cublas_dir=""
for d in /usr/local/cuda/lib64 /usr/local/cuda-13*/lib64 /usr/local/cuda*/lib64 \
         /usr/local/cuda*/targets/*-linux/lib; do
  if [ -e "$d/libcublas.so.13" ]; then cublas_dir=$d; break; fi
done
if [ -z "$cublas_dir" ] && command -v python3 >/dev/null; then
  for sp in $(python3 -c 'import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null); do
    for d in "$sp"/nvidia/cublas/lib "$sp"/nvidia/cu13/lib; do
      if [ -e "$d/libcublas.so.13" ]; then cublas_dir=$d; break 2; fi
    done
  done
fi
if [ -n "$cublas_dir" ]; then
  export LD_LIBRARY_PATH=$cublas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  say "== cuBLAS: $cublas_dir (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
else
  say "== cuBLAS: no libcublas.so.13 in /usr/local/cuda*/lib64 nor python3's nvidia/cublas/lib"
fi
for b in kernel_check kernel_check_dyn; do
  say "== ldd $b"
  ldd "$bin_dir/$b" 2>&1 | tee -a "$log"
done
bin=$bin_dir/kernel_check  # libstdc++ and libgcc static: needs glibc >= 2.36
if ! "$bin" --help >/dev/null 2>&1; then
  say "kernel_check does not start here: $("$bin" --help 2>&1 | head -n 2 | tr '\n' ' ')"
  say "using kernel_check_dyn (the system's libstdc++; glibc >= 2.34)"
  bin=$bin_dir/kernel_check_dyn
fi

args=(--validate test,quick --time quick --budget "${SEXTANT_CHECK_BUDGET:-0.25}")
say "== $(basename "$bin") ${args[*]}"
left=$((deadline - SECONDS))
timeout -k 5 "$left" "$bin" "${args[@]}" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
say "== kernel_check exit status $rc after ${SECONDS} s"

if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
  # Died before the end: rerun, one process per kernel, those whose summary line is
  # missing (the last kernel printed is the one that died).
  say "== rerunning, one process per kernel, the kernels after the last one finished"
  mapfile -t kernels < <("$bin" --list)
  last=$(awk 'NF >= 4 && $3 ~ /^(test|quick|full)$/ {k = $1} END {print k}' "$log")
  started=0
  for k in "${kernels[@]}"; do
    [ -z "$last" ] || [ "$k" = "$last" ] && started=1
    [ "$started" -eq 1 ] || continue
    left=$((deadline - SECONDS))
    if [ "$left" -le 5 ]; then
      say "== out of time before $k"
      break
    fi
    say "== $k alone"
    timeout -k 5 "$left" "$bin" "${args[@]}" --kernels "$k" 2>&1 | tee -a "$log"
    say "== $k: exit status ${PIPESTATUS[0]}"
  done
fi

# The full shapes, timed only (the quick ones are too small to fill a GPU: launch and
# fence overheads dominate them), in the time left.
left=$((deadline - SECONDS))
if [ "$left" -gt 20 ]; then
  say "== $(basename "$bin") --validate none --time full --budget 0.1"
  timeout -k 5 "$left" "$bin" --validate none --time full --budget 0.1 2>&1 | tee -a "$log"
  say "== full shapes: exit status ${PIPESTATUS[0]}"
fi

summary=$(grep -E '  (FAIL|ERROR) |WRONG:|ERROR:|passed, [0-9]+ failed|exit status' "$log")
say "== summary"
say "$summary"
say "== done in ${SECONDS} s"
exit "$rc"
