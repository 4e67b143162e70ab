#!/usr/bin/env bash
# sextant info prints every field the foundation promises.
source "$(dirname "$0")/../lib.sh"
sextant=$1
expect_rc 0 "$sextant" info
for field in hostname cpu_model cores cache_L1d cache_L2 mpi_library mpi_ranks kokkos_version kokkos_backends \
             kokkos_concurrency allocator hdf5_version compiler git_revision; do
  grep -qE "^$field +[^ ]" <<<"$out" || fail "sextant info lacks a value for $field"
done
contains "$out" "MPICH"
grep -qE '^kokkos_version +[345]\.' <<<"$out" || fail "kokkos_version is not a Kokkos 3/4/5 version"
grep -qE '^hdf5_version +1\.' <<<"$out" || fail "hdf5_version missing"
# Freed blocks stay in the process (core/allocator.hpp), unless the environment
# configures malloc itself; a sanitized build runs the sanitizer's allocator either way.
if [ "${SEXTANT_SANITIZED:-0}" = 1 ]; then kept="AddressSanitizer's allocator" configured=$kept
else kept="glibc malloc keeping freed blocks" configured="glibc malloc as the environment configures it"; fi
grep -qE "^allocator +$kept" <<<"$out" || fail "allocator: $(grep '^allocator' <<<"$out")"
expect_rc 0 env MALLOC_TOP_PAD_=131072 "$sextant" info
grep -qE "^allocator +$configured" <<<"$out" || fail "MALLOC_TOP_PAD_ set, allocator: $(grep '^allocator' <<<"$out")"
# The same under mpiexec with 2 ranks: only rank 0 prints.
expect_rc 0 timeout 60 mpiexec.mpich -n 2 "$sextant" info
[ "$(grep -c '^hostname' <<<"$out")" -eq 1 ] || fail "info printed more than once under mpiexec"
contains "$out" "2 on 1 node(s)"
# Ranks bound one per core (mpiexec -bind-to core) each see a one-CPU mask: the node's
# CPUs are the union of the masks, so one rank per CPU is not oversubscribed and one
# more is. (Hydra binds over all the machine's cores, whatever mask it was started with.)
# One thread per rank, whatever the caller's OMP_NUM_THREADS: a bound rank with two
# threads on its one CPU is oversubscribed, rightly.
cpus=$(getconf _NPROCESSORS_ONLN)
if [ "$cpus" -le 4 ]; then
  expect_rc 0 timeout 60 env OMP_NUM_THREADS=1 mpiexec.mpich -bind-to core -n "$cpus" "$sextant" info
  grep -qE "^cores +$cpus usable by this node's ranks \(1 by rank 0\)" <<<"$out" ||
    fail "bound ranks: cores should be $cpus usable, 1 by rank 0: $(grep '^cores' <<<"$out")"
  ! grep -q OVERSUBSCRIBED <<<"$out" || fail "$cpus ranks bound to $cpus CPUs called oversubscribed"
  expect_rc 0 timeout 60 env OMP_NUM_THREADS=1 mpiexec.mpich -bind-to core -n $((cpus + 1)) "$sextant" info
  contains "$out" "OVERSUBSCRIBED"
fi
echo "info: all fields present"
