#!/usr/bin/env bash
# The MPI library's collective algorithms through MPI_T (suites/comm/library_algorithms):
#  - the names sextant reads from each control's description are the library's own, in
#    the library's value order: for every algorithm listed, the library's environment
#    variable set to that name makes `sextant info` report it as the one set (MPICH
#    parses the name, sextant maps the value back: the truth is the library's parser);
#  - `run --algorithms all` measures each collective with each of them forced (results
#    BENCHMARK@ALGORITHM, validated like any run: a wrong value fails it), and `fit`
#    finds the library's own choice per size among them (selection "measured"), each
#    forced run with a cost formula as its own (selection "forced");
#  - an algorithm the library does not have is a usage error naming what it has.
# Skipped (77) where the library exposes no algorithm control (another MPI).
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2
expect_rc 0 "$sextant" info
if ! grep -q '^mpi_algorithms\.' <<<"$out"; then
  echo "SKIP: this MPI library exposes no collective algorithm through MPI_T"
  exit 77
fi
checked=0
while read -r key rest; do
  collective=${key#mpi_algorithms.}
  control=$(sed -n 's/.*; \(MPIR_CVAR_[A-Z_]*\))$/\1/p' <<<"$rest")
  [ -n "$control" ] || fail "no control named for $collective: $rest"
  for name in $(sed 's/ (set:.*//' <<<"$rest"); do
    [ "$name" = auto ] && continue
    expect_rc 0 env "$control=$name" "$sextant" info
    grep -qE "^mpi_algorithms\.$collective .*\(set: $name; " <<<"$out" ||
      fail "$control=$name: sextant info says $(grep "^mpi_algorithms\.$collective " <<<"$out")"
    checked=$((checked + 1))
  done
done < <(grep '^mpi_algorithms\.' <<<"$out")
echo "algorithms: $checked names read from MPI_T are the library's own (set through its environment, read back)"

# Every algorithm of two collectives forced, on 2 ranks, in their blocking form (the
# form a run takes unless its waits yield; asked for, so that the test does not depend
# on how many threads a rank has).
res=$work/alg.h5
expect_rc 0 timeout 300 mpiexec.mpich -n 2 "$sextant" run --suite comm --quick -m 4:64K -f 16 --wait blocking \
  --collectives pingpong,reduce_local,allreduce,bcast --algorithms all -o "$res"
expect_rc 0 "$sextant" info
for collective in allreduce bcast; do
  for name in $(sed -n "s/^mpi_algorithms\.$collective \(.*\) (set:.*/\1/p" <<<"$out"); do
    [ "$name" = auto ] && continue
    "$python" -c 'import h5py, sys
f = h5py.File(sys.argv[1], "r")
g = f["comm/world/" + sys.argv[2] + "/float32/p2"]
assert g.attrs["algorithm"] == sys.argv[3], g.attrs["algorithm"]
assert (g["wrong"][()] == 0).all() and len(g["median"]) >= 2' "$res" "$collective@$name" "$name" ||
      fail "$collective@$name: not measured as forced"
  done
done
# With yielding waits the collectives run non-blocking and their own controls are the
# ones forced: every algorithm of MPI_Iallreduce, not the library's selections among
# them (sched_auto, which MPICH asserts on when it is set).
res_nb=$work/alg_nb.h5
expect_rc 0 timeout 300 mpiexec.mpich -n 2 "$sextant" run --suite comm --quick -m 4:1K -f 16 --wait yield \
  --collectives allreduce --algorithms all -o "$res_nb"
expect_rc 0 "$sextant" info
forced=0
for name in $(sed -n "s/^mpi_algorithms\.iallreduce \(.*\) (set:.*/\1/p" <<<"$out"); do
  case $name in auto | *_auto) continue ;; esac
  "$python" -c 'import h5py, sys
g = h5py.File(sys.argv[1], "r")["comm/world/" + sys.argv[2] + "/float32/p2"]
assert g.attrs["algorithm"] == sys.argv[3], g.attrs["algorithm"]
assert (g["wrong"][()] == 0).all() and len(g["median"]) >= 2' "$res_nb" "allreduce@$name" "$name" ||
    fail "allreduce@$name: not measured as forced with yielding waits"
  forced=$((forced + 1))
done
[ "$forced" -ge 2 ] || fail "only $forced non-blocking allreduce algorithms forced"

model=$work/alg.model.h5
expect_rc 0 "$sextant" fit "$res" -o "$model"
"$python" -c 'import h5py, sys
f = h5py.File(sys.argv[1], "r")
a = f["comm_algorithms/world"]
assert a["allreduce/float32/p2"].attrs["selection"] == "measured"
assert a["allreduce@recursive_doubling/float32/p2"].attrs["selection"] == "forced"
assert [x.decode() for x in a["allreduce@recursive_doubling/float32/p2/algorithm"][()]] == ["recursive_doubling"]
assert [x.decode() for x in a["allreduce@reduce_scatter_allgather/float32/p2/algorithm"][()]] == ["rabenseifner"]' "$model" ||
  fail "the fit's algorithm view of the forced runs"
expect_rc 0 "$sextant" predict "$model" --op allreduce@recursive_doubling --bytes 1M --ranks 8
contains "$out" "recursive_doubling forced at 2 ranks"
expect_rc 2 timeout 60 mpiexec.mpich -n 2 "$sextant" run --suite comm --quick --collectives allreduce \
  --algorithms no_such_algorithm -o "$work/bad.h5"
contains "$err" "'no_such_algorithm' is not an algorithm"
contains "$err" "reduce_scatter_allgather"
echo "algorithms: forced runs measured, validated and fitted"
