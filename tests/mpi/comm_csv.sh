#!/usr/bin/env bash
# sextant run --suite comm --csv PREFIX --json FILE --total-bytes on 2 ranks: the CSV
# table holds one row per benchmark, dtype and size with the JSON document's numbers,
# to the last digit; the printed size column is what algbw counts (nccl-tests' "size":
# the whole vector for allreduce, every rank's block for allgather), and an OSU-style
# regex still reads the medians from it.
# Usage: comm_csv.sh SEXTANT PYTHON
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2
expect_rc 0 timeout 200 mpiexec.mpich -n 2 "$sextant" run --suite comm --quick --collectives allreduce,allgather \
  --dtypes float32,float64 -m 4:64K --total-bytes -o "$work/r.h5" --json "$work/r.json" --csv "$work/r"
[ -f "$work/r.comm.csv" ] || fail "no $work/r.comm.csv"
"$python" - "$work/r.json" "$work/r.comm.csv" "$out" <<'PY' || fail "the CSV or the total-bytes table disagrees with the JSON document"
import csv, json, re, sys
doc = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
want = [(g, s) for g in doc["comm"] for s in g["sizes"]]
assert len(rows) == len(want) > 0, (len(rows), len(want))
for row, (g, s) in zip(rows, want):
    for k in ("benchmark", "dtype", "level"):
        assert row[k] == str(g[k]), (k, row[k], g[k])
    assert int(row["ranks"]) == g["ranks"] and int(row["bytes"]) == s["bytes"], (row, g["ranks"], s["bytes"])
    for k in ("median_s", "ci_lo_s", "ci_hi_s", "algbw_Bps", "busbw_Bps"):
        assert float(row[k]) == s[k], (k, row[k], s[k])  # the same double, not a rounding of it
# The printed tables: the size column is the total bytes, and ^SIZE\s+(\S+) gives the median.
table, bench = {}, None
for line in sys.argv[3].splitlines():
    if line.startswith("# ") and "level=" in line:
        name, dtype = line.split()[1], re.search(r"dtype=(\S+)", line).group(1)
        bench = (name, dtype)
    elif line.startswith("#"):
        assert line.startswith("# total_bytes"), line
    elif bench and (m := re.match(r"^(\d+)\s+(\S+)", line)):
        table[(bench, int(m.group(1)))] = float(m.group(2))
for g in doc["comm"]:
    p = g["ranks"]
    for s in g["sizes"]:
        total = s["bytes"] * (p if g["benchmark"] == "allgather" else 1)
        got = table[((g["benchmark"], g["dtype"]), total)]
        # The table prints microseconds with 3 decimals: half a unit of the last one.
        assert abs(got - s["median_s"] * 1e6) <= 0.0005 + 1e-9, (g["benchmark"], total, got, s["median_s"])
print(f"comm csv: {len(rows)} rows equal to the JSON document; total-bytes column read by the OSU regex")
PY
