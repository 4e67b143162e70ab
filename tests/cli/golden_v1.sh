#!/usr/bin/env bash
# Files written by an older build (tests/data/golden, see its README) are read by this
# one: the same predictions from its model files, its results fitted, merged and
# reported; and a file of a newer schema version is refused by every reader, by name.
# Arguments: SEXTANT PYTHON GOLDEN_DIR
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2 golden=$3

# 1. The old model files predict what the old build predicted (predictions-v1.txt: its
#    first output line per command). The time and its interval are compared as printed
#    (4 significant digits): the prediction formulas must not drift silently.
time_of() { sed -E 's/^[^:]*: ([0-9.]+ [a-z]+)( +\[[^]]*\])?.*/\1\2/' <<<"$1"; }
while IFS='|' read -r command expected; do
  read -r -a words <<<"$command"
  expect_rc 0 "$sextant" predict "$golden/${words[0]}" "${words[@]:1}"
  got=$(head -1 <<<"$out")
  [ "$(time_of "$got")" = "$(time_of "$expected")" ] ||
    fail "predict ${command}: '$(time_of "$got")', the older build said '$(time_of "$expected")'"
  echo "same: $(time_of "$got")  (predict $command)"
done <"$golden/predictions-v1.txt"

# 2. The old results fitted by this build: predictions at the measured sizes against the
#    measurements (check_predict.py's limit), a merge of its comm and compute runs
#    fitted into one model with both parts, and a report.
expect_rc 0 "$sextant" fit "$golden/comm-v1.h5" -o "$work/comm.model.h5"
"$python" "$(dirname "$0")/check_predict.py" "$sextant" "$golden/comm-v1.h5" "$work/comm.model.h5" ||
  fail "the old results, fitted now, do not predict their own measurements"
expect_rc 0 "$sextant" merge "$golden/comm-v1.h5" "$golden/compute-v1.h5" -o "$work/merged.h5"
expect_rc 0 "$sextant" fit "$work/merged.h5" -o "$work/merged.model.h5"
expect_rc 0 "$sextant" predict "$work/merged.model.h5" --op allreduce --bytes 4K
expect_rc 0 "$sextant" predict "$work/merged.model.h5" --op gemm --shape 300,300,300
contains "$out" "gemm M=300,N=300,K=300"
expect_rc 0 "$sextant" report "$golden/comm-v1.h5" --model "$golden/comm-v1.model.h5" -o "$work/report"

# Results without pingpong: the collectives are fitted (direct view), and a prediction at
# another rank count says that there is no link to cost an algorithm on.
cp "$golden/comm-v1.h5" "$work/no-pingpong.h5"
"$python" -c 'import h5py, sys
with h5py.File(sys.argv[1], "r+") as f: del f["comm/world/pingpong"]' "$work/no-pingpong.h5"
expect_rc 0 "$sextant" fit "$work/no-pingpong.h5" -o "$work/no-pingpong.model.h5"
expect_rc 0 "$sextant" predict "$work/no-pingpong.model.h5" --op allreduce --bytes 4K --ranks 8
contains "$out" "no algorithm view for allreduce"
expect_rc 1 "$sextant" predict "$work/no-pingpong.model.h5" --op pingpong --bytes 8
contains "$err" "no model for 'pingpong'"

# Merge conflicts: the compute measurements of two runs (one run's machine each) are
# refused, naming both inputs; inputs from different CPUs merge with a warning naming them.
cp "$golden/compute-v1.h5" "$work/other-cpu.h5"
"$python" -c 'import h5py, sys
with h5py.File(sys.argv[1], "r+") as f: f["meta"].attrs["cpu_model"] = "Another CPU"' "$work/other-cpu.h5"
expect_rc 1 "$sextant" merge "$golden/compute-v1.h5" "$work/other-cpu.h5" -o "$work/conflict.h5"
contains "$err" "/compute is in both $golden/compute-v1.h5 and $work/other-cpu.h5"
[ ! -e "$work/conflict.h5" ] || fail "a refused merge left a file"
expect_rc 0 "$sextant" merge "$golden/comm-v1.h5" "$work/other-cpu.h5" -o "$work/mixed.h5"
contains "$err" "the inputs differ in cpu_model"
contains "$err" "Another CPU ($work/other-cpu.h5)"
[ -s "$work/report/summary.md" ] || fail "no summary.md from the old files"

# 3. A file of a schema version this build does not know: every reader refuses it,
#    naming the version (never a half-understood file).
for kind in comm-v1 comm-v1.model; do
  cp "$golden/$kind.h5" "$work/$kind.v2.h5"
  "$python" -c 'import h5py, sys
with h5py.File(sys.argv[1], "r+") as f: f["meta"].attrs["schema_version"] = 2' "$work/$kind.v2.h5"
done
for command in "fit $work/comm-v1.v2.h5 -o $work/x.model.h5" "merge $work/comm-v1.v2.h5 $golden/compute-v1.h5 -o $work/x.h5" \
               "report $work/comm-v1.v2.h5 -o $work/x" "predict $work/comm-v1.model.v2.h5 --op allreduce --bytes 8"; do
  # shellcheck disable=SC2086
  expect_rc 1 "$sextant" $command
  contains "$err" "schema version 2 is not supported"
done
[ ! -e "$work/x.model.h5" ] && [ ! -e "$work/x.h5" ] || fail "a refused file left an output behind"
echo "golden v1 files: read, fitted, merged and reported; version 2 refused by fit, merge, report and predict"
