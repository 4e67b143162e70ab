#!/usr/bin/env bash
# Bad input: a clear one-line message naming the file, option or value, and the
# documented exit status (2 usage, 1 runtime).
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2 model=$3

one_line() { [ "$(wc -l <<<"$err")" -eq 1 ] || fail "expected one line on stderr, got: $err"; }

expect_rc 1 "$sextant" predict "$work/nosuch.h5"
one_line; contains "$err" "$work/nosuch.h5"; contains "$err" "no such file"

echo "not hdf5" > "$work/README.md"
expect_rc 1 "$sextant" predict "$work/README.md"
one_line; contains "$err" "$work/README.md"; contains "$err" "not an HDF5 file"

cp "$model" "$work/v999.h5"
"$python" -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); f['meta'].attrs['schema_version']=999" "$work/v999.h5"
expect_rc 1 "$sextant" predict "$work/v999.h5"
one_line; contains "$err" "$work/v999.h5"; contains "$err" "version 999"

cp "$model" "$work/noschema.h5"
"$python" -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); del f['meta'].attrs['schema']" "$work/noschema.h5"
expect_rc 1 "$sextant" predict "$work/noschema.h5"
one_line; contains "$err" "$work/noschema.h5"

# A working-set sweep whose only curve was deleted (found by the fuzzer: the reader took
# the first of no children).
cp "$(dirname "$0")/../data/golden/compute-v1.h5" "$work/nosweep.h5"
"$python" -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); del f['compute/sweep/triad/float64']" "$work/nosweep.h5"
expect_rc 1 "$sextant" fit "$work/nosweep.h5" -o "$work/nosweep.model.h5"
one_line; contains "$err" "compute/sweep/triad"; contains "$err" "no dtype in the working-set sweep"

# Values no model can hold: exit 1, one line naming the file, the object and the value
# (a NaN alpha used to print "nan s" with exit 0).
damage() {  # damage NAME PYTHON-STATEMENT-ON-f: a copy of the model with one value changed
  cp "$model" "$work/$1.h5"
  "$python" -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); $2" "$work/$1.h5"
}
damage nan_alpha "g=f['comm/world/allreduce/float32/p2']; a=g['alpha'][()]; a[0]=float('nan'); g['alpha'][...]=a"
expect_rc 1 "$sextant" predict "$work/nan_alpha.h5" --op allreduce --bytes 8
one_line; contains "$err" "comm/world/allreduce/float32/p2"; contains "$err" "alpha nan"
damage negative_beta "g=f['comm/world/pingpong/byte/p2']; b=g['beta'][()]; b[-1]=-1e-9; g['beta'][...]=b"
expect_rc 1 "$sextant" predict "$work/negative_beta.h5" --op pingpong --bytes 8
one_line; contains "$err" "beta -1e-09"
damage wrong_ranks "f['comm/world/allreduce/float32/p2'].attrs['ranks']=7"
expect_rc 1 "$sextant" predict "$work/wrong_ranks.h5" --op allreduce --bytes 8
one_line; contains "$err" "ranks attribute 7 contradicts the group name"
damage bad_busbw "f['comm/world/allreduce/float32/p2'].attrs['busbw_factor']=float('nan')"
expect_rc 1 "$sextant" predict "$work/bad_busbw.h5" --op allreduce --bytes 8
one_line; contains "$err" "busbw_factor nan"
damage bad_size_unit "f['comm/world/allgather/float32/p2'].attrs['size_unit']='per_rank'"
expect_rc 1 "$sextant" predict "$work/bad_size_unit.h5" --op allgather --bytes 8
one_line; contains "$err" "comm/world/allgather/float32/p2"; contains "$err" "size_unit 'per_rank'"

# Usage errors: exit 2, naming the option or value.
expect_rc 2 "$sextant" predict "$model" --op allreduce --bytes 8 --ranks 0
contains "$err" "--ranks 0"
expect_rc 2 "$sextant" predict "$model" --train layers=2,hidden=64,heads=4,dp=2 --ranks 4
contains "$err" "--train takes its layout"
# Bounded work: the plan lists every layer, so layers are capped; numbers beyond int refused.
expect_rc 2 "$sextant" predict "$model" --train layers=1000000,hidden=64,heads=4
contains "$err" "--layers 1000000: at most 4096"
expect_rc 2 "$sextant" predict "$model" --train layers=1e10,hidden=64,heads=4
contains "$err" "layers='1e10' is not an integer"
expect_rc 2 "$sextant" predict "$model" --train layers=2.5,hidden=64,heads=4
contains "$err" "layers='2.5' is not an integer"
expect_rc 2 "$sextant" run --suite comm --sizes 4M:1
contains "$err" "4M:1"
expect_rc 2 "$sextant" run --suite comm --sizes 12Q
contains "$err" "12Q"
# Buffers that cannot fit are refused before anything runs (not left to the OOM killer).
expect_rc 2 "$sextant" run --suite comm -m 1024G:1024G --collectives allreduce -o "$work/huge.h5"
contains "$err" "the largest size needs 4 TiB of buffers per rank (allreduce float32 at 1 TiB)"
[ ! -e "$work/huge.h5" ] || fail "a usage error left the results file it made before measuring"
# Raised alike on every rank: said once, by rank 0.
expect_rc 2 mpiexec.mpich -n 2 "$sextant" run --suite comm --collectives nosuch -o "$work/two.h5"
[ "$(grep -c "unknown benchmark 'nosuch'" <<<"$err")" = 1 ] || fail "the usage error was not said exactly once: $err"
# Refused by the command-line parser before MPI starts: still said once, by the
# launcher's rank 0 (the process managers' PMI_RANK).
expect_rc 2 mpiexec.mpich -n 2 "$sextant" run --suite comm --no-such-option
[ "$(grep -c "no-such-option" <<<"$err")" = 1 ] || fail "the parse error was not said exactly once: $err"
expect_rc 0 mpiexec.mpich -n 2 "$sextant" --version
[ "$(grep -c "^sextant " <<<"$out")" = 1 ] || fail "the version was not printed exactly once: $out"
expect_rc 2 "$sextant" run --suite comm --collectives allreduce,nosuch
contains "$err" "nosuch"
expect_rc 2 "$sextant" run --suite comm --dtypes float16
contains "$err" "float16"
expect_rc 2 "$sextant" run --suite comm --dtypes float32,bfloat16 --op max
contains "$err" "--op max with --dtypes bfloat16"
expect_rc 2 "$sextant" run --suite comm --sync sometimes
contains "$err" "sometimes"
expect_rc 2 "$sextant" export "$model" --to nosuch -o "$work/x.json"
contains "$err" "--to 'nosuch': unknown format (known: extrap, astra-sim, calculon)"
expect_rc 1 "$sextant" export "$work/nosuch.h5" --to extrap -o "$work/x.json"
contains "$err" "nosuch.h5"
[ ! -e "$work/x.json" ] || fail "a failed export left a file"
# The rank sweep: more ranks than launched, fewer than a collective needs, out of
# order, for a suite that has no sweep.
expect_rc 2 "$sextant" run --suite comm --quick --ranks 2:8 -o "$work/r.h5"
contains "$err" "8 ranks asked for, the launch has 1"
[ ! -e "$work/r.h5" ] || fail "a refused rank sweep left a results file"
expect_rc 2 "$sextant" run --suite comm --ranks 1:2
contains "$err" "at least 2 ranks"
expect_rc 2 "$sextant" run --suite comm --ranks 4,2
contains "$err" "must ascend"
expect_rc 2 "$sextant" run --suite compute --ranks 2:4
contains "$err" "for --suite comm"
SEXTANT_GEMM_BLOCKS=96,x,256 expect_rc 2 "$sextant" run --suite compute --quick -o "$work/blocks.h5"
contains "$err" "SEXTANT_GEMM_BLOCKS=96,x,256"
[ ! -e "$work/blocks.h5" ] || fail "a malformed SEXTANT_GEMM_BLOCKS left a results file behind"
expect_rc 2 "$sextant" run --suite nosuch
contains "$err" "nosuch"
expect_rc 2 "$sextant" run --suite train --model-sizes small,huge -o "$work/t.h5"
contains "$err" "model size 'huge'"
[ ! -e "$work/t.h5" ] || fail "a usage error left a results file behind"
# Counts out of range, including the values that mean "not given" by default.
expect_rc 2 "$sextant" run --suite comm -i 0
contains "$err" "iterations"
expect_rc 2 "$sextant" run --suite comm -x -5
contains "$err" "warmup"
expect_rc 2 "$sextant" run --suite comm --check -1
contains "$err" "check"
expect_rc 2 "$sextant" predict "$model" --op allreduce --bytes 8Q
contains "$err" "8Q"
expect_rc 2 "$sextant" frobnicate
expect_rc 2 "$sextant" run --no-such-option

# Runtime errors: exit 1.
expect_rc 1 "$sextant" predict "$model" --op nosuch --bytes 8
contains "$err" "nosuch"
expect_rc 1 "$sextant" fit "$work/nosuch.h5"
contains "$err" "$work/nosuch.h5"
expect_rc 1 "$sextant" fit "$model"
contains "$err" "expected 'sextant.results'"

# An existing results file is never truncated by a new run unless --overwrite says so.
cp "$model" "$work/existing.h5"
expect_rc 2 "$sextant" run --suite comm --quick --collectives pingpong -o "$work/existing.h5"
contains "$err" "exists; sextant run replaces a results file only with --overwrite"
cmp -s "$model" "$work/existing.h5" || fail "the existing file was changed"

# An output that cannot be written is an error before anything is measured.
expect_rc 1 "$sextant" run --suite comm --quick --collectives pingpong --json /proc/nope.json -o "$work/j.h5"
contains "$err" "/proc/nope.json: cannot create a file beside it"
expect_rc 1 "$sextant" run --suite comm --quick --collectives pingpong --csv /proc/nope -o "$work/c.h5"
contains "$err" "/proc/nope.comm.csv: cannot create a file beside it"
[ ! -e "$work/c.h5" ] || fail "an unwritable --csv left a results file behind"
expect_rc 1 "$sextant" predict "$model" --op allreduce --bytes 8 --json /proc/nope.json
contains "$err" "/proc/nope.json: cannot create a file beside it"
# A prediction that fails leaves an existing JSON file as it was.
echo '{"kept": true}' >"$work/kept.json"
expect_rc 1 "$sextant" predict "$model" --op nosuch --bytes 8 --json "$work/kept.json"
grep -q '"kept": true' "$work/kept.json" || fail "a failed prediction replaced the JSON file"

# A run interrupted by SIGTERM (a scheduler's time limit) exits 128 + 15, says where
# its measurements are, and leaves the results file readable and marked incomplete.
"$sextant" run --suite compute --quick -o "$work/interrupted.h5" >/dev/null 2>"$work/interrupted.err" &
run_pid=$!
for _ in $(seq 1 100); do [ -e "$work/interrupted.h5" ] && break; sleep 0.1; done
sleep 0.5
kill -TERM "$run_pid"
set +e; wait "$run_pid"; rc=$?; set -e
[ "$rc" = 143 ] || fail "SIGTERM: exit $rc, expected 143"
contains "$(cat "$work/interrupted.err")" "interrupted by SIGTERM: what finished is in $work/interrupted.h5 (meta complete = no)"
h5dump -a /meta/complete "$work/interrupted.h5" | grep -q '"no"' || fail "the interrupted file is not marked incomplete"

# Help on every subcommand.
for sub in info run fit predict report; do
  expect_rc 0 "$sextant" "$sub" --help
  contains "$out" "$sub"
done
echo "errors: all cases behave"
