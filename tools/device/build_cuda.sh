#!/usr/bin/env bash
# Builds kernel_check for an NVIDIA Hopper GPU (sm_90) on a machine without one, and
# packs it with run.sh into a folder to carry to the GPU machine:
#
#   tools/device/build_cuda.sh [DEST]        DEST default: .device (repository root)
#
# Needs: CUDA 13.0 (nvcc in PATH, or CUDA_HOME; /usr/local/cuda here), g++ 12, CMake
# (3.16 to 3.26: Kokkos Kernels 3.4 finds cuBLAS through FindCUDA), Ninja, and Debian's
# trilinos source package (Kokkos and Kokkos Kernels 3.4.01 inside, as scripts/setup
# fetches it). Work folder: SEXTANT_GPU_BUILD (default /work/gpu-build); an extracted
# source there, and a Kokkos or Kokkos Kernels installed there, are reused. Jobs:
# SEXTANT_JOBS (default 2).
#
# The vendor path (vendor_gemm, vendor_gemm_batched, vendor_gemm_accumulate): Kokkos
# Kernels with its CUBLAS TPL, no ETI, no host BLAS. cuBLAS is linked as
# SEXTANT_DEVICE_CUBLAS says (tools/device/CMakeLists.txt): auto (default) links it
# statically where the toolkit has libcublas_static.a, libcublasLt_static.a and
# libculibos.a, unless that makes the package larger than SEXTANT_DEVICE_MAX_MIB
# (default 60), else shared: libcublas.so.13 then comes from the GPU machine's CUDA 13
# toolkit (RUNPATH /usr/local/cuda/lib64:/usr/local/cuda-13.0/lib64, and run.sh's
# LD_LIBRARY_PATH).
#
# Kokkos 3.4.01 predates CUDA 13 and Hopper; its copy here is patched where they meet:
#   - nvcc_wrapper: default arch sm_90 (not sm_35, which CUDA 13 rejects), and
#     -std=c++20 passed to nvcc (3.4 rewrote it to c++14 while g++ kept c++20);
#   - cmake/kokkos_arch.cmake: Kokkos_ARCH_AMPERE80 emits sm_90 (3.4 has no HOPPER90;
#     Kokkos aborts at start when the kernels' compute capability major differs from
#     the device's, so sm_80 code cannot run on an H200 under 3.4);
#   - Cuda/Kokkos_Cuda_Half.hpp: half_t converted to __half explicitly for the
#     __half2* intrinsics, and __half2double through float (CUDA 13's headers);
#   - Cuda/Kokkos_CudaSpace.cpp: cudaMemPrefetchAsync's CUDA 13 signature (a
#     cudaMemLocation and flags);
#   - Cuda/Kokkos_Cuda_BlockSize_Deduction.hpp: compute capabilities 8.9 and 9.0 in the
#     shared-memory table (used only with a desired occupancy).
# Kokkos Kernels 3.4.01 builds for CUDA 13 unpatched (with ETI off only the TPL
# wrappers are compiled; its cuBLAS calls are the v2 API CUDA 13 keeps).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dest=${1:-$repo/.device}
work=${SEXTANT_GPU_BUILD:-/work/gpu-build}
jobs=${SEXTANT_JOBS:-2}
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
log() { echo "build_cuda: $*" >&2; }
mkdir -p "$work"

# --- Kokkos and Kokkos Kernels 3.4.01 source (scripts/setup's recipe: a private apt ---
# state with deb-src). Only the packages missing from an earlier extraction are taken.
fetch_packages() {  # fetch_packages PACKAGE...: extracts packages/PACKAGE from the tarball
  local s=$work/src pats=() p
  mkdir -p "$s/lists/partial" "$s/sources.list.d" "$s/archives/partial"
  sed -e 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$s/sources.list.d/debian-src.sources"
  local opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$s/sources.list.d"
              -o "Dir::State::Lists=$s/lists" -o "Dir::Cache::Archives=$s/archives"
              -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
  log "fetching Debian's trilinos source package for $*"
  apt-get "${opts[@]}" update -qq
  (cd "$s" && apt-get "${opts[@]}" source --download-only -qq trilinos)
  for p in "$@"; do pats+=("*/packages/$p/*"); done
  tar -C "$s" -xf "$(ls "$s"/trilinos_*.orig.tar.* | head -n 1)" --wildcards "${pats[@]}"
  rm -f "$s"/trilinos_*.orig.tar.*
}
missing=()
ls -d "$work"/src/*/packages/kokkos >/dev/null 2>&1 || missing+=(kokkos)
ls -d "$work"/src/*/packages/kokkos-kernels >/dev/null 2>&1 || missing+=(kokkos-kernels)
[ ${#missing[@]} -eq 0 ] || fetch_packages "${missing[@]}"
src=$(ls -d "$work"/src/*/packages/kokkos | head -n 1)
kksrc=$(ls -d "$work"/src/*/packages/kokkos-kernels | head -n 1)
log "Kokkos source: $src; Kokkos Kernels source: $kksrc"

# --- the patches (idempotent) ------------------------------------------------------
sed -i 's/^default_arch="sm_35"/default_arch="sm_90"/' "$src/bin/nvcc_wrapper"
sed -i 's/^  --std=c++17|-std=c++17)$/  --std=c++17|-std=c++17|--std=c++20|-std=c++20)/' "$src/bin/nvcc_wrapper"
sed -i 's/^CHECK_CUDA_ARCH(AMPERE80  sm_80)$/CHECK_CUDA_ARCH(AMPERE80  sm_90)  # sextant: H200 (3.4 has no HOPPER90)/' \
  "$src/cmake/kokkos_arch.cmake"
sed -i -E '850,940{s/return __half2double\(val\);/return double(__half2float(half_t::impl_type(val)));/; s/return (__half2[a-z_]+)\(val\);/return \1(half_t::impl_type(val));/}' \
  "$src/core/src/Cuda/Kokkos_Cuda_Half.hpp"
sed -i 's/^      case 86: return 8;$/      case 86:\n      case 89:\n      case 90: return 8;  \/\/ sextant: Ada, Hopper (as Ampere)/' \
  "$src/core/src/Cuda/Kokkos_Cuda_BlockSize_Deduction.hpp"
python3 - "$src/core/src/Cuda/Kokkos_CudaSpace.cpp" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
old = """    CUDA_SAFE_CALL(cudaMemPrefetchAsync(ptr, bytes, space.cuda_device(),
                                        space.cuda_stream()));"""
new = """#if CUDART_VERSION >= 13000
    cudaMemLocation location{};
    location.type = cudaMemLocationTypeDevice;
    location.id   = space.cuda_device();
    CUDA_SAFE_CALL(
        cudaMemPrefetchAsync(ptr, bytes, location, 0, space.cuda_stream()));
#else
    CUDA_SAFE_CALL(cudaMemPrefetchAsync(ptr, bytes, space.cuda_device(),
                                        space.cuda_stream()));
#endif"""
if "CUDART_VERSION >= 13000" not in s:
    assert old in s, "Kokkos_CudaSpace.cpp: cudaMemPrefetchAsync call not found"
    open(p, "w").write(s.replace(old, new))
EOF
grep -q 'default_arch="sm_90"' "$src/bin/nvcc_wrapper"
grep -q 'std=c++20)' "$src/bin/nvcc_wrapper"
grep -q 'AMPERE80  sm_90' "$src/cmake/kokkos_arch.cmake"
grep -q 'case 90' "$src/core/src/Cuda/Kokkos_Cuda_BlockSize_Deduction.hpp"
! grep -q 'return __half2float(val);' "$src/core/src/Cuda/Kokkos_Cuda_Half.hpp"

# --- Kokkos: CUDA + Serial, static ---------------------------------------------------
kokkos=$work/kokkos-cuda
if [ ! -f "$kokkos/lib/libkokkoscore.a" ]; then
  log "building Kokkos (CUDA sm_90 + Serial) into $kokkos"
  cmake -S "$src" -B "$work/kokkos-cuda-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$kokkos" -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_COMPILER="$src/bin/nvcc_wrapper" \
    -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ARCH_AMPERE80=ON \
    -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF >"$work/kokkos-configure.log"
  nice -n 19 cmake --build "$work/kokkos-cuda-build" -j "$jobs" >"$work/kokkos-build.log"
  cmake --install "$work/kokkos-cuda-build" >/dev/null
fi

# --- Kokkos Kernels: the cuBLAS TPL only, no ETI -----------------------------------
# As scripts/setup's host build: every explicit instantiation off, so only the TPL
# wrappers (the cuBLAS handle) are compiled; KokkosBlas::gemm on CUDA Views of one
# layout (LayoutLeft or LayoutRight, CudaSpace) dispatches to cuBLAS from the headers.
# No host BLAS, no cuSPARSE (sextant calls no sparse kernel).
kk=$work/kokkos-kernels-cuda
if [ ! -f "$kk/lib/libkokkoskernels.a" ]; then
  log "building Kokkos Kernels (cuBLAS TPL, no ETI) into $kk"
  inst=()
  for v in DOUBLE FLOAT COMPLEX_DOUBLE COMPLEX_FLOAT LAYOUTLEFT LAYOUTRIGHT OFFSET_INT OFFSET_SIZE_T ORDINAL_INT; do
    inst+=("-DKokkosKernels_INST_$v=OFF")
  done
  cmake -S "$kksrc" -B "$work/kokkos-kernels-cuda-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$kk" -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_COMPILER="$kokkos/bin/nvcc_wrapper" \
    -DKokkos_ROOT="$kokkos" -DKokkosKernels_ENABLE_TPL_CUBLAS=ON -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF \
    -DKokkosKernels_ENABLE_TPL_BLAS=OFF -DKokkosKernels_ENABLE_TPL_LAPACK=OFF "${inst[@]}" \
    -DKokkosKernels_ENABLE_TESTS=OFF -DKokkosKernels_ENABLE_EXAMPLES=OFF >"$work/kokkos-kernels-configure.log"
  nice -n 19 cmake --build "$work/kokkos-kernels-cuda-build" -j "$jobs" >"$work/kokkos-kernels-build.log"
  cmake --install "$work/kokkos-kernels-cuda-build" >/dev/null
fi

# --- kernel_check ------------------------------------------------------------------
build=$work/device-cuda
# A build folder configured from another checkout (a worktree) is started afresh.
if [ -f "$build/CMakeCache.txt" ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$repo/tools/device" "$build/CMakeCache.txt"; then
  rm -rf "$build"
fi
build_and_pack() {  # build_and_pack CUBLAS: CUBLAS is SEXTANT_DEVICE_CUBLAS (auto, static, shared)
  log "building kernel_check in $build (cuBLAS: $1)"
  cmake -S "$repo/tools/device" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="$kokkos" \
    -DKokkosKernels_ROOT="$kk" -DCMAKE_CXX_COMPILER="$kokkos/bin/nvcc_wrapper" -DSEXTANT_DEVICE_STATIC=ON \
    -DSEXTANT_DEVICE_CUBLAS="$1" >"$work/device-configure.log"
  nice -n 19 cmake --build "$build" -j "$jobs"
  # A second link with the system's libstdc++ and libgcc: the static one needs glibc >= 2.36
  # (arc4random), this one 2.34.
  local link
  link=$(cd "$build" && ninja -t commands kernel_check | tail -n 1 | sed -e 's/^: && //' -e 's/ && :$//')
  link=${link//-static-libstdc++ -static-libgcc/}
  (cd "$build" && eval "${link/-o kernel_check /-o kernel_check_dyn }")
  mkdir -p "$dest"
  strip -o "$dest/kernel_check" "$build/kernel_check"
  strip -o "$dest/kernel_check_dyn" "$build/kernel_check_dyn"
  cp "$repo/tools/device/run.sh" "$dest/run.sh"
}
build_and_pack "${SEXTANT_DEVICE_CUBLAS:-auto}"
linked=$(sed -n 's/^-- sextant_device: cuBLAS linked //p' "$work/device-configure.log")
limit_mib=${SEXTANT_DEVICE_MAX_MIB:-60}
if [ "$linked" = static ] && [ "${SEXTANT_DEVICE_CUBLAS:-auto}" = auto ] && [ "$(du -sm "$dest" | cut -f 1)" -gt "$limit_mib" ]; then
  log "static cuBLAS makes the package $(du -sm "$dest" | cut -f 1) MiB (over $limit_mib): linking it shared"
  build_and_pack shared
  linked=shared
fi
log "cuBLAS: ${linked:-none (no Kokkos Kernels)}"
log "ldd $dest/kernel_check:"; ldd "$dest/kernel_check" >&2 || true
du -sh "$dest" >&2
log "on the GPU machine: bash $(basename "$dest")/run.sh"
