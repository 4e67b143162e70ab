#!/usr/bin/env bash
# `sextant merge` of two real results files (2 and 3 ranks, as two jobs would make
# them) gives one results file that `sextant fit` accepts with fits at both rank
# counts, and keeps each input's provenance; merging a file with itself fails
# naming the group.
# Usage: merge.sh SEXTANT PYTHON
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2 here=$(dirname "$0")

for n in 2 3; do
  expect_rc 0 timeout 120 mpiexec.mpich -n "$n" "$sextant" run --suite comm --quick --overwrite \
    --collectives allreduce,pingpong -o "$work/r$n.h5"
done

expect_rc 0 "$sextant" merge "$work/r2.h5" "$work/r3.h5" -o "$work/merged.h5"
contains "$err" "wrote $work/merged.h5 (4 groups from 2 files)"
[ ! -e "$work/merged.h5.tmp" ] || fail "temporary file left"
"$python" "$here/check_meta.py" "$work/merged.h5" meta:schema=sextant.results meta:schema_version=1 \
  "meta:merged_from=$work/r2.h5
$work/r3.h5" meta:suite=comm meta:ranks=3 \
  "source:0:file=$work/r2.h5" "source:1:file=$work/r3.h5" source:0:ranks=2 source:1:ranks=3 \
  source:0:schema=sextant.results has:/sources/0/environment has:/sources/1/environment \
  has:/comm/world/allreduce/float32/p2 has:/comm/world/allreduce/float32/p3 \
  has:/comm/world/pingpong/byte/p2 has:/comm/world/pingpong/byte/p3 \
  has:/comm/world/allreduce/float32/p3/samples/000 has:/meta/environment
# The copies are exact: every dataset and attribute of each group.
"$python" - "$work/merged.h5" "$work/r2.h5" "$work/r3.h5" <<'PY'
import sys, h5py, numpy as np
merged = h5py.File(sys.argv[1], "r")
for src_path in sys.argv[2:]:
    src = h5py.File(src_path, "r")
    def compare(name, obj):
        m = merged["/comm/" + name]
        for k, v in obj.attrs.items():
            assert np.array_equal(np.asarray(m.attrs[k]), np.asarray(v)), (name, k)
        if isinstance(obj, h5py.Dataset):
            a, b = obj[()], m[()]
            same = np.array_equal(a, b, equal_nan=True) if a.dtype.kind == "f" else np.array_equal(a, b)
            assert same, name
    src["comm"].visititems(compare)
print("merged groups equal their sources")
PY

expect_rc 0 "$sextant" fit "$work/merged.h5" -o "$work/merged.model.h5"
grep -qE '^allreduce +world +float32 +2 ' <<<"$out" || fail "no allreduce fit at 2 ranks: $out"
grep -qE '^allreduce +world +float32 +3 ' <<<"$out" || fail "no allreduce fit at 3 ranks: $out"
expect_rc 0 "$sextant" predict "$work/merged.model.h5"
contains "$out" "pingpong  level=world  dtype=byte  ranks=2"
contains "$out" "pingpong  level=world  dtype=byte  ranks=3"
expect_rc 0 "$sextant" predict "$work/merged.model.h5" --op allreduce --bytes 4K --ranks 3
contains "$out" "on 3 ranks"

# The same group twice: an error naming the group and both files; nothing written.
expect_rc 1 "$sextant" merge "$work/r2.h5" "$work/r2.h5" -o "$work/self.h5"
contains "$err" "/comm/world/"
contains "$err" "/p2 is in both $work/r2.h5 and $work/r2.h5"
[ ! -e "$work/self.h5" ] && [ ! -e "$work/self.h5.tmp" ] || fail "a file was written for a failed merge"
expect_rc 1 "$sextant" merge "$work/r3.h5" "$work/merged.h5" -o "$work/again.h5"
contains "$err" "/p3 is in both $work/r3.h5 and $work/merged.h5"

# Inputs are checked like any results file; the output must be a new file.
expect_rc 1 "$sextant" merge "$work/r2.h5" "$work/merged.model.h5" -o "$work/x.h5"
contains "$err" "$work/merged.model.h5"
contains "$err" "expected 'sextant.results'"
expect_rc 1 "$sextant" merge "$work/r2.h5" "$work/nosuch.h5" -o "$work/x.h5"
contains "$err" "$work/nosuch.h5: no such file"
expect_rc 2 "$sextant" merge "$work/r2.h5" "$work/r3.h5" -o "$work/r3.h5"
contains "$err" "-o $work/r3.h5: is also an input"
expect_rc 2 "$sextant" merge "$work/r2.h5"
expect_rc 0 "$sextant" merge --help
echo "merge: ok"
